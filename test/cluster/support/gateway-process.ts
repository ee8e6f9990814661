import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { CLOSE_MS, START_MS } from '../../support/deadline';
import { TEST_ADMIN_TOKEN, TEST_SECRET, TestGateway } from '../../support/gateway';
import { sleep } from '../../support/http';
import { ensureBuilt, NodeProcess, readyStatus } from './processes';

/**
 * The settings `startGateway` (test/support/gateway.ts) gives an in-process gateway, for a real
 * process: any free loopback port, the test secrets, a 2 s drain on SIGTERM and no delay before it
 * (in-process, close() drains at once). Logs at `info` in JSON instead of silent: the boot line
 * names the port the process got, and they are kept (not shown) to be printed with a failing test's
 * error.
 */
const DEFAULTS: Record<string, string> = {
  LISTEN_ADDR: '127.0.0.1:0',
  WORKER_SECRET: TEST_SECRET,
  ADMIN_TOKEN: TEST_ADMIN_TOKEN,
  LOG_LEVEL: 'info',
  LOG_FORMAT: 'json',
  SHUTDOWN_DRAIN_TIMEOUT_SECS: '2',
  SHUTDOWN_DELAY_SECS: '0',
};

/** The boot summary's `switchboard <version> listening on http://127.0.0.1:<port>`. */
const LISTENING = /listening on http:\/\/127\.0\.0\.1:(\d+)/;

/** How much of each process's output a failing test's error carries: the end, where the failure is. */
const LOG_TAIL = 48 * 1024;

/** Every gateway process this test file started (jest loads this module once per file). */
const started: NodeProcess[] = [];

/**
 * A `TestGateway` whose gateway is a separate `node dist/main.js` process: what is tested is what
 * runs in production, each replica with its own event loop, and nothing shared in memory with the
 * test or the other replicas.
 */
export interface ProcessGateway extends TestGateway {
  readonly process: NodeProcess;
}

/**
 * Waits until `proc` has logged the port it listens on and `/health/ready` there answers 200.
 * The port is bound by the process itself (LISTEN_ADDR port 0), as in-process: a port chosen
 * beforehand could be taken by another program before the process binds it, and that program's
 * answers taken for the gateway's.
 */
async function whenReady(proc: NodeProcess, ms: number): Promise<number> {
  const until = Date.now() + ms;
  let port: number | undefined;
  while (Date.now() < until) {
    if (!proc.running) throw new Error(`${proc.name} exited while starting:\n${proc.log}`);
    port ??= Number(LISTENING.exec(proc.log)?.[1]) || undefined;
    if (port !== undefined && (await readyStatus(`http://127.0.0.1:${port}`)) === 200) return port;
    await sleep(50);
  }
  throw new Error(`${proc.name} not ready within ${ms} ms:\n${proc.log}`);
}

/**
 * `startGateway(env)` as a real process: `node dist/main.js` (built first when `dist/` is older
 * than `src/`), resolved once it listens and `/health/ready` answers 200 (rejected with its output,
 * and killed, if it exits or is not ready within START_MS). Without DATABASE_URL it gets a SQLite
 * file in a temporary directory, as in-process. `close()` sends SIGTERM and waits for the exit
 * (SIGKILL after the drain timeout plus CLOSE_MS, and then it throws, as does an exit other than 0).
 * The in-process `app` does not exist: reading it throws.
 */
export async function startGatewayProcess(env: Record<string, string> = {}): Promise<ProcessGateway> {
  ensureBuilt();
  const dir = env.DATABASE_URL ? undefined : mkdtempSync(join(tmpdir(), 'switchboard-test-'));
  const name = env.CLUSTER_REPLICA_ID ?? `gateway-${started.length + 1}`;
  const settings: Record<string, string> = { ...DEFAULTS, ...(dir ? { DATABASE_URL: `sqlite:${join(dir, 'switchboard.db')}` } : {}), ...env };
  const proc = new NodeProcess(
    name,
    'dist/main.js',
    () => [],
    () => settings,
  );
  started.push(proc);
  proc.spawn();
  let port: number;
  try {
    port = await whenReady(proc, START_MS);
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
      throw new Error(`gateway process ${name} ${what}:\n${proc.log.slice(-LOG_TAIL)}`);
    }
  };
  return {
    get app(): NestFastifyApplication {
      throw new Error(`${name} runs as a separate process: there is no in-process app`);
    },
    process: proc,
    url: `http://127.0.0.1:${port}`,
    workerUrl: `ws://127.0.0.1:${port}/v1/worker/connect`,
    close: () => (closed ??= close()),
  };
}

/** Runs `fn`; when it throws, the output of every gateway process this file started (the end of it) is added to the error. */
export async function withGatewayLogs<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    const err = e instanceof Error ? e : new Error(String(e));
    if (started.length > 0)
      err.message += `\n\n${started.map((p) => `===== ${p.name} (${p.log.length > LOG_TAIL ? 'the end of ' : ''}its output) =====\n${p.log.slice(-LOG_TAIL)}`).join('\n')}`;
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
