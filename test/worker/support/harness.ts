import { WorkerConfig, workerConfig } from '../../../src/worker/config';
import { WorkerDaemon, WorkerDaemonOptions } from '../../../src/worker/daemon';
import { createLogger } from '../../../src/worker/logger';
import { CLOSE_MS, withDeadline } from '../../support/deadline';
import { FakeBackend } from './fake-backend';
import { FakeGateway, Frame } from './fake-gateway';

export const SECRET = 'wk-secret-5f1d0c9e';

export interface RunningWorker {
  daemon: WorkerDaemon;
  /** Every log line the daemon wrote, parsed. */
  logs: Array<Record<string, unknown>>;
  rawLogs: string[];
}

/** Starts gateway + backend on loopback ports and cleans everything up after each test. */
export function useWorkerHarness() {
  const env = {
    gateway: undefined as unknown as FakeGateway,
    backend: undefined as unknown as FakeBackend,
    workers: [] as RunningWorker[],
  };

  beforeEach(async () => {
    env.gateway = new FakeGateway({ secret: SECRET });
    env.backend = new FakeBackend();
    await Promise.all([env.gateway.start(), env.backend.start()]);
  });

  afterEach(async () => {
    for (const w of env.workers.splice(0)) {
      void w.daemon.stop();
      void w.daemon.stop(); // second call: no drain wait
      await withDeadline(w.daemon.waitForExit(), CLOSE_MS, 'the worker daemon did not exit after stop()');
    }
    await Promise.all([env.gateway.stop(), env.backend.close()]);
  });

  const startWorker = (overrides: Partial<WorkerConfig> = {}, options: WorkerDaemonOptions = {}): RunningWorker => {
    const rawLogs: string[] = [];
    const logs: Array<Record<string, unknown>> = [];
    const config = workerConfig({
      workerSecret: SECRET,
      proxyUrl: env.gateway.url,
      backendUrl: overrides.backendUrl ?? env.backend.url,
      workerName: 'test-worker',
      models: ['llama3'],
      discoverModels: false,
      reconnectMinMs: 50,
      reconnectMaxMs: 400,
      drainTimeoutMs: 2_000,
      modelsPollIntervalMs: 0,
      // Probing sends its own requests to the backend; suites about probing turn it on.
      probe: false,
      ...overrides,
    });
    const logger = createLogger({
      level: 'debug',
      secrets: [config.workerSecret, config.backendApiKey ?? ''],
      write: (line) => {
        rawLogs.push(line);
        logs.push(JSON.parse(line) as Record<string, unknown>);
      },
    });
    const daemon = new WorkerDaemon(config, { logger, ...options });
    const worker = { daemon, logs, rawLogs };
    env.workers.push(worker);
    daemon.start();
    return worker;
  };

  return { env, startWorker };
}

let counter = 0;

export function requestFrame(
  opts: {
    path?: string;
    stream?: boolean;
    model?: string;
    body?: Record<string, unknown>;
    headers?: Record<string, string>;
  } = {},
): Frame & { request_id: string } {
  const model = opts.model ?? 'llama3';
  const stream = opts.stream ?? false;
  const path = opts.path ?? '/v1/chat/completions';
  const body =
    opts.body ??
    (path === '/v1/messages'
      ? { model, max_tokens: 64, stream, messages: [{ role: 'user', content: 'Hi' }] }
      : path === '/v1/responses'
        ? { model, stream, input: 'Hi' }
        : { model, stream, messages: [{ role: 'user', content: 'Hi' }] });
  return {
    type: 'request',
    request_id: `r-${++counter}`,
    model,
    endpoint_path: path,
    is_streaming: stream,
    body: JSON.stringify(body),
    headers: opts.headers ?? { 'content-type': 'application/json', authorization: 'Bearer client-key-abc' },
  };
}

/** Awaits `promise`, failing with a readable message instead of the 30 s jest timeout. */
export function within<T>(promise: Promise<T>, what: string, ms = 5_000): Promise<T> {
  let timer: NodeJS.Timeout;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
