import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { CLOSE_MS, START_MS } from '../../support/deadline';
import { TEST_ADMIN_TOKEN, TEST_SECRET, TestGateway } from '../../support/gateway';
import { ensureBuilt, GatewayProcess, logsOf } from './processes';

/**
 * The settings `startGateway` (test/support/gateway.ts) gives an in-process gateway, for a real
 * process: the test secrets, a 2 s drain on SIGTERM and no delay before it (in-process, close()
 * drains at once). Logs at `warn` in JSON instead of silent: they are kept, not shown, and printed
 * with a failing test's error.
 */
const DEFAULTS: Record<string, string> = {
  WORKER_SECRET: TEST_SECRET,
  ADMIN_TOKEN: TEST_ADMIN_TOKEN,
  LOG_LEVEL: 'warn',
  LOG_FORMAT: 'json',
  SHUTDOWN_DRAIN_TIMEOUT_SECS: '2',
  SHUTDOWN_DELAY_SECS: '0',
};

/** Every gateway process this test file started (jest loads this module once per file). */
const started: GatewayProcess[] = [];

/**
 * A `TestGateway` whose gateway is a separate `node dist/main.js` process: what is tested is what
 * runs in production, each replica with its own event loop, and nothing shared in memory with the
 * test or the other replicas.
 */
export interface ProcessGateway extends TestGateway {
  readonly process: GatewayProcess;
}

/**
 * `startGateway(env)` as a real process: `node dist/main.js` on a free loopback port (built first
 * when `dist/` is older than `src/`), resolved once `/health/ready` answers 200 (rejected with its
 * output if it exits or is not ready within START_MS). Without DATABASE_URL it gets a SQLite file
 * in a temporary directory, as in-process. `close()` sends SIGTERM and waits for the exit (SIGKILL
 * after the drain timeout plus CLOSE_MS, and then it throws, as does an exit other than 0).
 * The in-process `app` does not exist: reading it throws.
 */
export async function startGatewayProcess(env: Record<string, string> = {}): Promise<ProcessGateway> {
  ensureBuilt();
  const dir = env.DATABASE_URL ? undefined : mkdtempSync(join(tmpdir(), 'switchboard-test-'));
  const name = env.CLUSTER_REPLICA_ID ?? `gateway-${started.length + 1}`;
  const settings: Record<string, string> = { ...DEFAULTS, ...(dir ? { DATABASE_URL: `sqlite:${join(dir, 'switchboard.db')}` } : {}), ...env };
  const proc = await GatewayProcess.create(name, settings, {});
  started.push(proc);
  try {
    await proc.start(START_MS);
  } catch (e) {
    await proc.kill9();
    if (dir) rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  const bound = Number(settings.SHUTDOWN_DRAIN_TIMEOUT_SECS) * 1000 + CLOSE_MS;
  let closed: Promise<void> | undefined;
  const close = async () => {
    const exit = proc.exited;
    await proc.stop(bound);
    if (dir) rmSync(dir, { recursive: true, force: true });
    const { code, signal } = await exit;
    if (code !== 0) {
      const what = signal === 'SIGKILL' ? `did not exit within ${bound} ms of SIGTERM (killed)` : `exited with code ${code} signal ${signal} after SIGTERM`;
      throw new Error(`gateway process ${name} ${what}:\n${proc.log}`);
    }
  };
  return {
    get app(): NestFastifyApplication {
      throw new Error(`${name} runs as a separate process: there is no in-process app`);
    },
    process: proc,
    url: proc.url,
    workerUrl: `ws://127.0.0.1:${proc.port}/v1/worker/connect`,
    close: () => (closed ??= close()),
  };
}

/** Runs `fn`; when it throws, the output of every gateway process this file started is added to the error. */
export async function withGatewayLogs<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    const err = e instanceof Error ? e : new Error(String(e));
    if (started.length > 0) err.message += `\n\n${logsOf(started)}`;
    throw err;
  }
}

/** Jest's `it`, a failing test's error carrying every gateway process's output (withGatewayLogs). */
export function itWithLogs(name: string, fn: () => Promise<unknown>, timeout?: number): void {
  it(name, () => withGatewayLogs(fn), timeout);
}

/**
 * For afterAll: closes `gateways` one after the other (each close() runs even when one before it
 * failed), then kills (SIGKILL) any gateway process of this file still running, such as one that
 * failed to start, so no process outlives the test file. Throws the close() errors, if any, after that.
 */
export async function closeGateways(gateways: Iterable<TestGateway | undefined>): Promise<void> {
  const errors: string[] = [];
  for (const gw of gateways) {
    if (!gw) continue;
    await gw.close().catch((e: Error) => errors.push(e.message));
  }
  for (const proc of started) if (proc.running) await proc.kill9();
  if (errors.length > 0) throw new Error(errors.join('\n\n'));
}
