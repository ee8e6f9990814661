import { startGateway, TestGateway, TEST_ADMIN_TOKEN } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { admin, chat, post } from '../support/http';

/** The runner spec's GET /v1/capabilities example (resources and flags), as a backend would write it. */
const RUNNER_DOC = {
  runnerType: 'vllm-0.6.0',
  samplerProfileVersion: 'sp-2026-01',
  resources: { gpuIds: [0], gpuMemoryTotalMB: 81920, gpuMemoryUsedMB: 58000, gpuMemoryFreeMB: 23920, kvCacheSizeMB: 12000, kvCacheUtilization: 0.45 },
  capabilities: { streaming: true, prefixCaching: true, multiTenant: true, audioInput: false },
};

describe('/v1/capabilities and /v1/pools/:id/health: one computation of slots, and the runner facts', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({});
  });
  afterAll(() => gw.close());

  it('reported load is busy, a draining worker is in neither total nor free, busy + free = total on both', async () => {
    const { worker: a } = await ScriptedWorker.register(gw.workerUrl, {
      models: ['cap-a'],
      max_concurrent: 4,
      current_load: 1, // load the worker reports beyond what the gateway gave it
      runner: { type: 'vllm', version: '0.6.0' },
      runner_capabilities: RUNNER_DOC,
      capabilities: { 'cap-a': { context_length: 8192 } },
    });
    const { worker: b, ack: bAck } = await ScriptedWorker.register(gw.workerUrl, {
      models: ['cap-b'],
      max_concurrent: 2,
      runner: { type: 'vllm', version: '0.9.1' },
    });
    const pending = post(gw.url, '/v1/chat/completions', chat('cap-b'));
    const req = await b.next('request');
    expect((await admin(gw.url, 'POST', `/admin/workers/${bAck.worker_id}/drain`, TEST_ADMIN_TOKEN, { timeout_secs: 30, reason: 'test' })).status).toBe(202);

    const pool: any = ((await (await fetch(`${gw.url}/v1/capabilities`)).json()) as any).pools.find((p: { id: string }) => p.id === 'local');
    const health = (await admin(gw.url, 'GET', '/v1/pools/local/health', TEST_ADMIN_TOKEN)).json;
    expect(health.metrics.slots).toEqual({ total: 4, busy: 1, free: 3 });
    expect(pool.slots).toEqual(health.metrics.slots);
    expect(health.metrics.in_flight).toBe(1);
    expect(pool.health).toEqual({ enabled: true, ready: health.ready });
    expect(health.ready).toBe(true);

    // The pool's engines and what its runner documents say (engine_version a list: the workers differ).
    expect(pool).toMatchObject({
      engine: 'vllm',
      engine_version: ['0.6.0', '0.9.1'],
      sampler_profile_version: 'sp-2026-01',
      max_tokens_out: 8192,
      prefixCaching: true,
      multiTenant: true,
      audioInput: false,
      resources: {
        gpuMemoryTotalMB: 81920,
        gpuMemoryUsedMB: 58000,
        gpuMemoryFreeMB: 23920,
        kvCacheSizeMB: 12000,
        kvCacheUtilization: 0.45,
        reporting_workers: 1,
      },
    });

    b.complete(req.request_id, {});
    expect((await pending).status).toBe(200);
    a.close();
    b.close();
  });
});
