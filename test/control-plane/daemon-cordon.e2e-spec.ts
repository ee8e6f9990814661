import OpenAI from 'openai';
import { startGateway, TestGateway, TEST_SECRET } from '../support/gateway';
import { eventually } from '../support/http';
import { WorkerConfig, workerConfig } from '../../src/worker/config';
import { WorkerDaemon, WorkerDaemonOptions } from '../../src/worker/daemon';
import { createLogger } from '../../src/worker/logger';
import { FakeBackend } from '../worker/support/fake-backend';
import { within } from '../worker/support/harness';
import { call } from './support';

/**
 * The real worker daemon against the real gateway while a pool or a worker name is cordoned: it
 * drains, is refused with 1013 when it reconnects, and then waits instead of looping.
 */
describe('cordons with the real worker daemon', () => {
  let gw: TestGateway;
  let backend: FakeBackend;
  const daemons: WorkerDaemon[] = [];

  interface Running {
    daemon: WorkerDaemon;
    logs: Array<Record<string, unknown>>;
    /** WebSocket connections the daemon opened (refused ones included). */
    connections: number;
    delays: number[];
  }

  async function worker(overrides: Partial<WorkerConfig> = {}, options: WorkerDaemonOptions = {}): Promise<Running> {
    const logs: Array<Record<string, unknown>> = [];
    const daemon = new WorkerDaemon(
      workerConfig({
        workerSecret: TEST_SECRET,
        proxyUrl: gw.url,
        backendUrl: backend.url,
        workerName: 'cordon-test',
        models: ['llama3'],
        discoverModels: false,
        heartbeatIntervalMs: 200,
        // A daemon that loops would reconnect every 50-100 ms.
        reconnectMinMs: 50,
        reconnectMaxMs: 100,
        drainTimeoutMs: 2_000,
        probe: false,
        ...overrides,
      }),
      { logger: createLogger({ level: 'debug', write: (line) => logs.push(JSON.parse(line) as Record<string, unknown>) }), ...options },
    );
    daemons.push(daemon);
    const running: Running = { daemon, logs, connections: 0, delays: [] };
    daemon.on('connected', () => running.connections++);
    daemon.on('reconnect_scheduled', (s) => running.delays.push(s.delayMs));
    const registered = new Promise<void>((resolve) => daemon.once('registered', () => resolve()));
    daemon.start();
    await within(registered, 'the daemon to register');
    return running;
  }

  const openai = () => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'client-key', maxRetries: 0 });
  const workers = async () => (await call(gw, 'GET', '/admin/workers')).json.data as Array<{ id: string; name: string }>;

  /** Resolves once the daemon has been refused and scheduled its long wait. */
  const cordonWait = (w: Running) => eventually(() => w.logs.some((l) => l.msg === 'waiting for an operator to lift the cordon before reconnecting'), 10_000);

  beforeEach(async () => {
    gw = await startGateway({ HEARTBEAT_INTERVAL_SECS: '0.2', HEARTBEAT_TIMEOUT_SECS: '5' });
    backend = new FakeBackend();
    backend.replyText = 'served';
    await backend.start();
  });

  afterEach(async () => {
    for (const d of daemons.splice(0)) {
      void d.stop();
      void d.stop();
      await d.waitForExit();
    }
    await gw.close();
    await backend.close();
  });

  it('pool drain: the daemon drains, is refused 1013 on its reconnect, then waits instead of looping (one or two attempts at most)', async () => {
    const w = await worker();
    expect(w.connections).toBe(1);
    expect((await call(gw, 'POST', '/v1/pools/local/drain', { deadline_ms: 2000 })).status).toBe(202);
    await cordonWait(w);
    const refusal = w.logs.find((l) => l.code === 1013);
    expect(refusal).toMatchObject({ level: 'warn', reason: 'worker cordoned by an operator: retry later' });
    expect(w.delays[w.delays.length - 1]).toBeGreaterThanOrEqual(30_000);
    expect(w.delays[w.delays.length - 1]).toBeLessThanOrEqual(60_000);

    // Watch a window in which a looping daemon would have tried several times.
    const seen = w.connections;
    await new Promise((r) => setTimeout(r, 700));
    expect(w.connections).toBe(seen);
    expect(w.connections - 1).toBeLessThanOrEqual(2); // attempts after the drain
    expect(await workers()).toEqual([]);
    expect(w.daemon.status.state).toBe('waiting_to_reconnect');
  });

  it('worker-name drain: the same, and the daemon is not back in rotation within seconds as it used to be', async () => {
    const w = await worker({ workerName: 'gpu-named' });
    const [{ id }] = await workers();
    expect((await call(gw, 'POST', `/admin/workers/${id}/drain`, { reason: 'maintenance' })).status).toBe(202);
    await cordonWait(w);
    const seen = w.connections;
    await new Promise((r) => setTimeout(r, 700));
    expect(w.connections).toBe(seen);
    expect(w.connections - 1).toBeLessThanOrEqual(2);
    expect(await workers()).toEqual([]);
    expect((await call(gw, 'GET', '/admin/cordons')).json.workers).toEqual([expect.objectContaining({ name: 'gpu-named', worker_ids: [id] })]);
  });

  it('after undrain the daemon registers at its next try and serves again', async () => {
    // A short cordon wait so the test sees the retry; the default is 30-60 s.
    const w = await worker({}, { cordonRetryMs: 300, cordonRetryMaxMs: 400 });
    expect((await call(gw, 'POST', '/v1/pools/local/drain', { deadline_ms: 2000 })).status).toBe(202);
    await cordonWait(w);
    expect((await call(gw, 'POST', '/v1/pools/local/undrain')).status).toBe(200);
    await within(new Promise<void>((r) => w.daemon.once('registered', () => r())), 'the daemon to register again', 10_000);
    const res = await openai().chat.completions.create({ model: 'llama3', messages: [{ role: 'user', content: 'hello' }] });
    expect(res.choices[0].message.content).toBe('served');
    expect((await call(gw, 'GET', '/v1/pools/local/health')).json).toMatchObject({ live: true, ready: true, draining: false });
  });
});
