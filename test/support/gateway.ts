import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { loadConfig } from '../../src/config';
import { createApp, CreateAppOptions } from '../../src/bootstrap';
import { CLOSE_MS, START_MS, withDeadline } from './deadline';

export const TEST_SECRET = 'test-worker-secret';
export const TEST_ADMIN_TOKEN = 'test-admin-token';

export interface TestGateway {
  app: NestFastifyApplication;
  /** http://127.0.0.1:<port> */
  url: string;
  /** ws://127.0.0.1:<port>/v1/worker/connect */
  workerUrl: string;
  /** Closes the app (runs the graceful shutdown hooks) and removes the temp database. */
  close(): Promise<void>;
}

/**
 * Starts the real gateway in-process on a free loopback port with a real SQLite file, fast
 * heartbeat timings and silent logs. `env` overrides any variable.
 */
export async function startGateway(env: Record<string, string> = {}, options: CreateAppOptions = {}): Promise<TestGateway> {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-test-'));
  const config = loadConfig({
    LISTEN_ADDR: '127.0.0.1:0',
    WORKER_SECRET: TEST_SECRET,
    ADMIN_TOKEN: TEST_ADMIN_TOKEN,
    DATABASE_URL: `sqlite:${join(dir, 'switchboard.db')}`,
    LOG_LEVEL: 'silent',
    SHUTDOWN_DRAIN_TIMEOUT_SECS: '2',
    ...env,
  });
  const app = await withDeadline(createApp(config, options), START_MS, 'startGateway: the gateway did not start listening');
  const address = app.getHttpServer().address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const url = `http://127.0.0.1:${port}`;
  let closed = false;
  return {
    app,
    url,
    workerUrl: `ws://127.0.0.1:${port}/v1/worker/connect`,
    async close() {
      if (closed) return;
      closed = true;
      // Its own drain deadline, plus the bound: close() runs the SIGTERM drain.
      await withDeadline(app.close(), config.shutdownDrainTimeoutMs + CLOSE_MS, 'gateway close() did not finish');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
