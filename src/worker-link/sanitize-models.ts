/**
 * Bounds on what a worker may declare (documented in docs/protocol.md). Oversized values are cut
 * down and reported in `register_ack.warnings` rather than refused: a refused worker would
 * reconnect with the same frame forever, a trimmed one serves what it can and says so.
 */
export const WorkerLimits = {
  /** The `worker_records.name` column. */
  workerNameChars: 255,
  modelNameChars: 256,
  /** Ceiling over every provider's `max_models`. */
  models: 1024,
  /** Sum of the accepted model names' lengths. */
  modelsTotalChars: 65_536,
  maxConcurrent: 4096,
  /** More raw entries than this is not a worker's model list: the frame is refused (1002). */
  rawModelEntries: 65_536,
} as const;

export interface SanitizedModels {
  models: string[];
  warnings: string[];
}

/**
 * Trims names, drops empties, over-long names and exact duplicates (first seen wins), caps the
 * list at `limit` entries and at a total size. Every drop is reported, because the worker
 * believes it serves what it sent.
 */
export function sanitizeModels(raw: string[], limit: number): SanitizedModels {
  const warnings: string[] = [];
  const seen = new Set<string>();
  let empty = 0;
  let tooLong = 0;
  let duplicate = 0;
  for (const name of raw) {
    const m = name.trim();
    if (m === '') empty++;
    // Dropped, not shortened: a shortened name is not a model the backend knows.
    else if (m.length > WorkerLimits.modelNameChars) tooLong++;
    else if (seen.has(m)) duplicate++;
    else seen.add(m);
  }
  let models = [...seen];
  if (empty) warnings.push(`dropped ${empty} empty model name${empty === 1 ? '' : 's'}`);
  if (tooLong) {
    warnings.push(`dropped ${tooLong} model name${tooLong === 1 ? '' : 's'} longer than ${WorkerLimits.modelNameChars} characters`);
  }
  if (duplicate) warnings.push(`dropped ${duplicate} duplicate model name${duplicate === 1 ? '' : 's'}`);
  const cap = Math.min(limit, WorkerLimits.models);
  if (models.length > cap) {
    warnings.push(`model list truncated from ${models.length} to ${cap} entries (${cap === limit ? 'provider' : 'gateway'} limit)`);
    models = models.slice(0, cap);
  }
  let total = 0;
  let fit = 0;
  while (fit < models.length && total + models[fit].length <= WorkerLimits.modelsTotalChars) total += models[fit++].length;
  if (fit < models.length) {
    warnings.push(`model list truncated from ${models.length} to ${fit} entries (model names above ${WorkerLimits.modelsTotalChars} characters in total)`);
    models = models.slice(0, fit);
  }
  if (models.length === 0) warnings.push('worker registered without any routable models');
  return { models, warnings };
}

/** Trims the worker's name and bounds it; an empty name becomes `unnamed`. */
export function sanitizeWorkerName(raw: string, warnings: string[]): string {
  const name = raw.trim();
  if (name.length <= WorkerLimits.workerNameChars) return name || 'unnamed';
  warnings.push(`worker_name truncated to ${WorkerLimits.workerNameChars} characters`);
  return name.slice(0, WorkerLimits.workerNameChars).replace(/[\uD800-\uDBFF]$/, '');
}

/** `max_concurrent` 0 counts as 1; above the gateway's ceiling it is lowered to it. */
export function sanitizeMaxConcurrent(raw: number, warnings: string[]): number {
  if (raw <= WorkerLimits.maxConcurrent) return Math.max(1, raw);
  warnings.push(`max_concurrent lowered from ${raw} to ${WorkerLimits.maxConcurrent} (gateway limit)`);
  return WorkerLimits.maxConcurrent;
}

/** Names quoted in one warning at most (a hostile list must not make the ack huge). */
const NAMES_QUOTED = 10;

/**
 * Keeps the advertised models this worker's provider may serve (its allow-list, and no model
 * another provider owns; see providers/model-ownership.ts) and reports the rest in `warnings`.
 * `*` stays: it means "any model this provider allows", and routing applies that rule per request.
 */
export function restrictToProvider(
  models: string[],
  mayServe: (model: string) => boolean,
  provider: { name: string; restricted: boolean },
  warnings: string[],
): string[] {
  const refused: string[] = [];
  const kept = models.filter((m) => {
    if (m === '*' || mayServe(m)) return true;
    refused.push(m);
    return false;
  });
  if (refused.length > 0) {
    const quoted = refused
      .slice(0, NAMES_QUOTED)
      .map((m) => `"${m.slice(0, 64)}"`)
      .join(', ');
    const more = refused.length > NAMES_QUOTED ? ` and ${refused.length - NAMES_QUOTED} more` : '';
    warnings.push(
      `dropped ${refused.length} model${refused.length === 1 ? '' : 's'} provider "${provider.name}" may not serve ` +
        `(not in its models, or listed by another provider): ${quoted}${more}`,
    );
  }
  if (models.includes('*') && provider.restricted) warnings.push(`"*" stands for the models provider "${provider.name}" allows`);
  if (kept.length === 0 && models.length > 0) warnings.push('worker registered without any routable models');
  return kept;
}
