import { startGateway, TestGateway, TEST_ADMIN_TOKEN, TEST_SECRET } from '../support/gateway';
import { admin, eventually } from '../support/http';
import { metricValue } from '../support/routing';
import { WorkerConfig, workerConfig } from '../../src/worker/config';
import { WorkerDaemon } from '../../src/worker/daemon';
import { FakeBackend } from './support/fake-backend';
import { actLikeLlamaServer, actLikeVllm } from './support/fake-runners';
import { llamaServerMetrics, llamaServerSlots, vllmMetrics } from './support/fake-cache-docs';
import { useWorkerHarness } from './support/harness';

/**
 * Issue 19, cache telemetry: the real daemon reads its backend's cache documents (llama-server
 * `/slots` + `/metrics`, vLLM `/metrics`, served here in the engines' real formats), reports them in
 * `pong.cache_stats` once negotiated, and the real gateway shows them on /admin/workers and /metrics.
 */
describe('worker daemon cache telemetry against the real gateway', () => {
  let gw: TestGateway;
  const backends: FakeBackend[] = [];
  const daemons: WorkerDaemon[] = [];

  async function backend(): Promise<FakeBackend> {
    const b = new FakeBackend();
    b.models = ['llama3'];
    await b.start();
    backends.push(b);
    return b;
  }

  async function worker(b: FakeBackend, overrides: Partial<WorkerConfig>): Promise<{ daemon: WorkerDaemon; id: () => Promise<string> }> {
    const name = `cache-w-${daemons.length + 1}`;
    const daemon = new WorkerDaemon(
      workerConfig({
        workerSecret: TEST_SECRET,
        proxyUrl: gw.url,
        backendUrl: b.url,
        workerName: name,
        models: ['llama3'],
        discoverModels: false,
        heartbeatIntervalMs: 200,
        reconnectMinMs: 50,
        reconnectMaxMs: 200,
        drainTimeoutMs: 2_000,
        ...overrides,
      }),
    );
    daemons.push(daemon);
    const registered = new Promise<void>((resolve) => daemon.once('registered', () => resolve()));
    daemon.start();
    await registered;
    const id = async () => (await workers()).find((w: { name: string }) => w.name === name).id as string;
    return { daemon, id };
  }

  const workers = async () => (await admin(gw.url, 'GET', '/admin/workers', TEST_ADMIN_TOKEN)).json.data;
  const statsOf = async (name: string) => (await workers()).find((w: { name: string }) => w.name === name)?.cache_stats;

  beforeEach(async () => {
    gw = await startGateway({ HEARTBEAT_INTERVAL_SECS: '0.1', HEARTBEAT_TIMEOUT_SECS: '5' });
  });

  afterEach(async () => {
    for (const d of daemons.splice(0)) {
      void d.stop();
      void d.stop();
      await d.waitForExit();
    }
    await gw.close();
    await Promise.all(backends.splice(0).map((b) => b.close()));
  });

  it('llama-server: reads /slots and /metrics, and the gateway shows KV usage and prefix hits on /admin/workers and /metrics', async () => {
    const b = await backend();
    actLikeLlamaServer(b, { ctxSize: 8192, slots: 2 });
    let kvTokens = 2048;
    b.routes.set('GET /metrics', () => ({ status: 200, text: llamaServerMetrics({ kvTokens }) }));
    b.routes.set('GET /slots', () => ({
      status: 200,
      json: llamaServerSlots([
        { nCtx: 4096, processing: true, prompt: [900, 600] },
        { nCtx: 4096, processing: false, prompt: [100, 0] },
      ]),
    }));
    await worker(b, { probe: true });
    await eventually(async () => (await statsOf('cache-w-1'))?.kv_cache_usage_ratio === 0.25, 5000, 'KV usage 2048/8192 on /admin/workers');
    expect(await statsOf('cache-w-1')).toEqual({ kv_cache_usage_ratio: 0.25, prefix_cache_hit_ratio: 0.6 });
    kvTokens = 6144;
    await eventually(async () => (await statsOf('cache-w-1'))?.kv_cache_usage_ratio === 0.75, 5000, 'the next reading');
    expect(await metricValue(gw, 'switchboard_worker_kv_cache_usage_ratio', { provider: 'local', worker: 'cache-w-1' })).toBe(0.75);
    expect(b.probes.some((r) => r.path === '/slots')).toBe(true);
  });

  it('vLLM: reads /metrics (kv_cache_usage_perc and the prefix-cache counters)', async () => {
    const b = await backend();
    actLikeVllm(b, { maxModelLen: { llama3: 8192 }, version: '0.10.1' });
    let counters = { hits: 300, queries: 1000 };
    b.routes.set('GET /metrics', () => ({ status: 200, text: vllmMetrics({ kv: 0.42, ...counters }) }));
    await worker(b, { probe: true });
    await eventually(async () => (await statsOf('cache-w-1'))?.kv_cache_usage_ratio === 0.42, 5000, 'vLLM KV usage on /admin/workers');
    counters = { hits: 1200, queries: 2000 };
    await eventually(async () => (await statsOf('cache-w-1'))?.prefix_cache_hit_ratio === 0.9, 5000, 'hit ratio over the interval');
    expect(b.probes.some((r) => r.path === '/slots')).toBe(false);
  });

  it('an Ollama or unknown backend negotiates no cache_stats, and the worker shows none', async () => {
    const b = await backend();
    await worker(b, { probe: false });
    await new Promise((r) => setTimeout(r, 400));
    expect(await statsOf('cache-w-1')).toBeNull();
    expect(b.probes.filter((r) => r.path === '/metrics' || r.path === '/slots')).toEqual([]);
  });
});

describe('worker daemon cache_stats negotiation (fake gateway)', () => {
  const { env, startWorker } = useWorkerHarness();

  function serveLlamaCache(b: FakeBackend): void {
    actLikeLlamaServer(b, { ctxSize: 4096, slots: 1 });
    b.routes.set('GET /metrics', () => ({ status: 200, text: llamaServerMetrics({ ratio: 0.5, kvTokens: 2048 }) }));
    b.routes.set('GET /slots', () => ({ status: 200, json: llamaServerSlots([{ nCtx: 4096, processing: false, prompt: [100, 40] }]) }));
  }

  it('asks for cache_stats in front of llama-server and puts the figures in pong once the gateway accepts it', async () => {
    env.backend.models = ['llama3'];
    serveLlamaCache(env.backend);
    env.gateway.ackFeatures = ['response_start', 'cancel_reasons', 'cache_stats'];
    startWorker({ runner: 'llama-server' });
    const conn = await env.gateway.connection(1);
    expect((await conn.next('register')).features).toContain('cache_stats');
    await eventually(() => env.backend.probes.some((r) => r.path === '/slots'), 5000, 'the first read after register_ack');
    await new Promise((r) => setTimeout(r, 100));
    conn.send({ type: 'ping', timestamp_unix_ms: 1 });
    expect((await conn.next('pong')).cache_stats).toEqual({ kv_cache_usage_ratio: 0.5, prefix_cache_hit_ratio: 0.4 });
  });

  it('sends no cache_stats field to a gateway that did not accept the feature, and reads nothing', async () => {
    env.backend.models = ['llama3'];
    serveLlamaCache(env.backend);
    env.gateway.ackFeatures = ['response_start', 'cancel_reasons'];
    startWorker({ runner: 'llama-server' });
    const conn = await env.gateway.connection(1);
    await conn.next('register');
    for (let i = 0; i < 3; i++) {
      conn.send({ type: 'ping', timestamp_unix_ms: i });
      expect(await conn.next('pong')).not.toHaveProperty('cache_stats');
    }
    expect(env.backend.probes.filter((r) => r.path === '/slots' || r.path === '/metrics')).toEqual([]);
  });
});
