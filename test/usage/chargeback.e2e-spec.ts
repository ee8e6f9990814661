import { admin, chat, eventually, get, post, sleep } from '../support/http';
import { startGateway, TEST_ADMIN_TOKEN, TestGateway } from '../support/gateway';
import { writeConfig } from '../support/routing';
import { ScriptedWorker } from '../support/scripted-worker';

/**
 * GPU-time chargeback against scripted workers that hold each request for a known time: the
 * usage totals, their GPU share and cost, per tenant, pool and model, and the busy-seconds series.
 */
describe('GPU-time chargeback (issue 21)', () => {
  let gw: TestGateway;
  let gpu: ScriptedWorker;
  let cpu: ScriptedWorker;

  const usage = async (query = ''): Promise<any[]> => {
    const res = await admin(gw.url, 'GET', `/admin/usage${query}`, TEST_ADMIN_TOKEN);
    expect(res.status).toBe(200);
    return res.json.data;
  };

  /** A request the worker answers `holdMs` after it was placed there. */
  async function held(worker: ScriptedWorker, model: string, tenant: string, holdMs: number): Promise<void> {
    const pending = post(gw.url, '/v1/chat/completions', chat(model, { messages: [{ role: 'user', content: 'hi' }] }), { 'x-tenant-id': tenant });
    const req = await worker.next('request');
    await sleep(holdMs);
    worker.complete(req.request_id, { ok: true });
    expect((await pending).status).toBe(200);
  }

  beforeAll(async () => {
    const configFile = writeConfig(`
providers:
  - name: gpu
    secret: gpu-secret
    cost_per_gpu_hour: 3600
    gpus_per_worker: 4
  - name: cpu
    secret: cpu-secret
`);
    gw = await startGateway({ CONFIG_FILE: configFile, USAGE_FLUSH_INTERVAL_SECS: '0.05' });
    // Two slots: each request holds half of the worker's 4 GPUs, i.e. 2 GPUs.
    ({ worker: gpu } = await ScriptedWorker.register(gw.workerUrl, { models: ['big'], max_concurrent: 2 }, { provider: 'gpu', secret: 'gpu-secret' }));
    ({ worker: cpu } = await ScriptedWorker.register(gw.workerUrl, { models: ['small'], max_concurrent: 1 }, { provider: 'cpu', secret: 'cpu-secret' }));

    await held(gpu, 'big', 'team-a', 400);
    await held(gpu, 'big', 'team-b', 200);
    await held(cpu, 'small', 'team-a', 300);
    await eventually(async () => (await usage())[0]?.requests === 3);
  });

  afterAll(async () => {
    gpu?.close();
    cpu?.close();
    await gw?.close();
  });

  /** `actual` is the known hold time, plus at most the round trips of a loopback test. */
  const about = (actual: number, expected: number) => {
    expect(actual).toBeGreaterThanOrEqual(expected - 0.005);
    expect(actual).toBeLessThan(expected + 0.25);
  };

  it('charges each request its slot time as a share of the worker, priced at its pool', async () => {
    const byPool = Object.fromEntries((await usage('?group_by=pool')).map((r) => [r.pool, r]));
    about(byPool.gpu.worker_seconds, 0.6);
    // A slot of a 2-slot worker with 4 GPUs is 2 GPUs: gpu_seconds = worker_seconds / 2 × 4.
    expect(byPool.gpu.gpu_seconds).toBeCloseTo(byPool.gpu.worker_seconds * 2, 2);
    // 3600 per GPU-hour = 1 per GPU-second.
    expect(byPool.gpu.cost).toBeCloseTo(byPool.gpu.gpu_seconds, 2);
    // An unpriced pool: GPU time (1 slot, 1 GPU), no cost.
    about(byPool.cpu.worker_seconds, 0.3);
    expect(byPool.cpu.gpu_seconds).toBeCloseTo(byPool.cpu.worker_seconds, 3);
    expect(byPool.cpu.cost).toBeNull();
  });

  it('splits the figures per tenant, model and day', async () => {
    const byTenant = Object.fromEntries((await usage('?group_by=tenant')).map((r) => [r.tenant, r]));
    about(byTenant['team-a'].worker_seconds, 0.7);
    about(byTenant['team-b'].gpu_seconds, 0.4);
    about(byTenant['team-b'].cost, 0.4);
    // team-a's cost is its gpu pool request only.
    about(byTenant['team-a'].cost, 0.8);
    const byModel = Object.fromEntries((await usage('?group_by=model')).map((r) => [r.model, r]));
    about(byModel.big.gpu_seconds, 1.2);
    about(byModel.small.gpu_seconds, 0.3);
    const [day] = await usage('?group_by=day');
    about(day.gpu_seconds, 1.5);
    const onlyB = await usage('?tenant=team-b');
    about(onlyB[0].worker_seconds, 0.2);
  });

  it('feeds switchboard_worker_busy_seconds_total{pool,tenant} with the slot share', async () => {
    const text = (await get(gw.url, '/metrics')).text;
    const value = (pool: string, tenant: string) => {
      const line = text.split('\n').find((l) => l.startsWith(`switchboard_worker_busy_seconds_total{pool="${pool}",tenant="${tenant}"}`));
      return Number(line?.split(' ').pop());
    };
    // 400 ms of one of 2 slots is 0.2 worker-seconds.
    about(value('gpu', 'team-a'), 0.2);
    about(value('gpu', 'team-b'), 0.1);
    about(value('cpu', 'team-a'), 0.3);
  });

  it('keeps queue time off the bill: a request waiting for a slot is charged from its placement', async () => {
    const before = (await usage('?tenant=team-c'))[0];
    expect(before.requests).toBe(0);
    // The cpu worker's only slot is taken for 300 ms; team-c waits for it, then holds it 100 ms.
    const first = post(gw.url, '/v1/chat/completions', chat('small'), { 'x-tenant-id': 'team-d' });
    const r1 = await cpu.next('request');
    const second = post(gw.url, '/v1/chat/completions', chat('small'), { 'x-tenant-id': 'team-c' });
    await sleep(300);
    cpu.complete(r1.request_id, { ok: true });
    const r2 = await cpu.next('request');
    await sleep(100);
    cpu.complete(r2.request_id, { ok: true });
    expect((await first).status).toBe(200);
    expect((await second).status).toBe(200);
    const row = await eventually(async () => {
      const [r] = await usage('?tenant=team-c');
      return r.requests === 1 ? r : undefined;
    });
    about(row.worker_seconds, 0.1);
  });
});
