import { ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync, createWriteStream, WriteStream } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { sleep } from './util';

export const MAIN_JS = resolve(__dirname, '..', '..', 'dist', 'main.js');

export interface SpawnOptions {
  /** Extra/overriding environment variables for the gateway. */
  env?: Record<string, string>;
  /** YAML text for CONFIG_FILE. */
  configYaml?: string;
  /** Short label used in the temp dir name and error messages. */
  label?: string;
}

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface SpawnedGateway {
  url: string;
  wsUrl: string;
  port: number;
  pid: number;
  dir: string;
  env: Record<string, string>;
  exited: Promise<ExitInfo>;
  /** Everything the process wrote to stdout/stderr so far. */
  output(): string;
  /** Sends `signal` (SIGTERM by default), waits for exit (SIGKILL after `graceMs`), removes the temp dir. */
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<ExitInfo>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolvePort(port));
    });
  });
}

/** Environment every suite-owned gateway gets; `opts.env` overrides. */
export function baseEnv(dir: string, port: number): Record<string, string> {
  return {
    LISTEN_ADDR: `127.0.0.1:${port}`,
    DATABASE_URL: `sqlite:${join(dir, 'switchboard.db')}`,
    LOG_LEVEL: process.env.CONTRACT_LOG_LEVEL ?? 'warn',
    WORKER_SECRET: 'contract-worker-secret',
    ADMIN_TOKEN: 'contract-admin-token',
    PROVIDER_NAME: 'local',
    HEARTBEAT_INTERVAL_SECS: '0.2',
    HEARTBEAT_TIMEOUT_SECS: '0.6',
    REGISTER_TIMEOUT_SECS: '2',
    MAX_QUEUE_LEN: '8',
    QUEUE_TIMEOUT_SECS: '3',
    REQUEST_TIMEOUT_SECS: '8',
    CANCEL_GRACE_SECS: '0.5',
    SHUTDOWN_DRAIN_TIMEOUT_SECS: '3',
    AUTH_FAILURE_LIMIT: '1000',
    AUTH_FAILURE_WINDOW_SECS: '60',
    AUTH_BLOCK_SECS: '60',
  };
}

/**
 * Spawns the built gateway (`node dist/main.js`) as a child process on a free loopback port with
 * its own temp SQLite file, and waits until GET /health/live answers.
 */
export async function spawnGateway(opts: SpawnOptions = {}): Promise<SpawnedGateway> {
  if (!existsSync(MAIN_JS)) {
    throw new Error(`${MAIN_JS} does not exist: run \`npm run build\` before \`npm run test:contract\``);
  }
  const dir = mkdtempSync(join(tmpdir(), `switchboard-contract-${opts.label ?? 'gw'}-`));
  const port = await freePort();
  const env: Record<string, string> = { ...baseEnv(dir, port), ...(opts.env ?? {}) };
  if (opts.configYaml !== undefined) {
    const file = join(dir, 'config.yaml');
    writeFileSync(file, opts.configYaml);
    env.CONFIG_FILE = file;
  }
  const inherited: Record<string, string> = {};
  for (const key of ['PATH', 'HOME', 'TMPDIR', 'LANG', 'TZ']) {
    const v = process.env[key];
    if (v !== undefined) inherited[key] = v;
  }
  const child: ChildProcess = spawn(process.execPath, [MAIN_JS], {
    cwd: dir,
    env: { ...inherited, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const log: WriteStream = createWriteStream(join(dir, 'gateway.log'));
  const capture = (d: Buffer) => {
    output += d.toString();
    if (output.length > 2_000_000) output = output.slice(-1_000_000);
    log.write(d);
  };
  child.stdout?.on('data', capture);
  child.stderr?.on('data', capture);
  const exited = new Promise<ExitInfo>((res) => child.once('exit', (code, signal) => res({ code, signal })));
  let hasExited = false;
  void exited.then(() => {
    hasExited = true;
    log.end();
  });

  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (hasExited) {
      const info = await exited;
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`gateway (${opts.label ?? 'gw'}) exited during startup (code ${info.code}, signal ${info.signal}):\n${output}`);
    }
    try {
      // Bounded: a gateway that accepts but never answers must not stall the startup loop.
      const res = await fetch(`${url}/health/live`, { signal: AbortSignal.timeout(5_000) });
      if (res.status === 200) break;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`gateway (${opts.label ?? 'gw'}) did not answer /health/live within 30 s:\n${output}`);
    }
    await sleep(50);
  }

  let stopping: Promise<ExitInfo> | undefined;
  return {
    url,
    wsUrl: `ws://127.0.0.1:${port}/v1/worker/connect`,
    port,
    pid: child.pid!,
    dir,
    env,
    exited,
    output: () => output,
    stop(signal: NodeJS.Signals = 'SIGTERM', graceMs = 15_000) {
      stopping ??= (async () => {
        if (!hasExited) child.kill(signal);
        const timer = setTimeout(() => {
          if (!hasExited) child.kill('SIGKILL');
        }, graceMs);
        const info = await exited;
        clearTimeout(timer);
        await sleep(20);
        rmSync(dir, { recursive: true, force: true });
        return info;
      })();
      return stopping;
    },
  };
}
