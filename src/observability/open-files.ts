import { readFileSync } from 'node:fs';

/**
 * Every waiting client, worker and in-flight request holds a socket, so the open-files limit caps
 * how many clients the gateway can hold. Node raises its soft limit to the hard one at startup, so
 * the soft limit read from inside the process is the effective one. See docs/deployment.md for the
 * formula below.
 */

/** Worker connections and the clients they are serving at any moment. */
export const WORKER_ALLOWANCE = 1024;
/** The listening socket, the database, logs, probes, scrapes, admin calls and Node itself. */
export const HEADROOM = 256;

/** Open files the configuration may need: one per queued client, plus the allowances. */
export function requiredOpenFiles(maxQueueLens: Iterable<number>): number {
  let queued = 0;
  for (const n of maxQueueLens) queued += n;
  return queued + WORKER_ALLOWANCE + HEADROOM;
}

/**
 * The soft "Max open files" limit from the text of /proc/<pid>/limits; `Infinity` for
 * `unlimited`, undefined when the line is missing or unreadable.
 */
export function parseSoftOpenFilesLimit(limits: string): number | undefined {
  const m = /^Max open files\s+(\S+)/m.exec(limits);
  if (!m) return undefined;
  if (m[1] === 'unlimited') return Infinity;
  const n = Number(m[1]);
  return Number.isInteger(n) && n >= 0 ? n : undefined;
}

/** This process's soft open-files limit; undefined where it cannot be read (not Linux). */
export function readSoftOpenFilesLimit(
  platform: NodeJS.Platform = process.platform,
  read: () => string = () => readFileSync('/proc/self/limits', 'utf8'),
): number | undefined {
  if (platform !== 'linux') return undefined;
  try {
    return parseSoftOpenFilesLimit(read());
  } catch {
    return undefined;
  }
}

/** The boot warning, when the soft limit is known and below what the configuration needs. */
export function openFilesWarning(softLimit: number | undefined, maxQueueLens: number[]): string | undefined {
  const required = requiredOpenFiles(maxQueueLens);
  if (softLimit === undefined || softLimit >= required) return undefined;
  const queued = required - WORKER_ALLOWANCE - HEADROOM;
  return (
    `the open-files limit (ulimit -n) is ${softLimit}, below the ${required} this configuration may need ` +
    `(${queued} queued clients across providers' max_queue_len + ${WORKER_ALLOWANCE} for workers and the clients they serve + ${HEADROOM} headroom): ` +
    'connections beyond the limit fail with EMFILE. Raise it, e.g. LimitNOFILE=65536 (systemd) or --ulimit nofile=65536:65536 (docker)'
  );
}
