import { eventually } from '../support/http';
import { createPool, lifecycleWorker, LifecycleGateway, POOL_SECRET, startLifecycleGateway } from './support';

/** Issue 22: a refreshed runner document (negotiated `runner_capabilities` frame) replaces the registered one. */
describe('runner document refresh at the gateway', () => {
  let gw: LifecycleGateway;
  beforeAll(async () => {
    gw = await startLifecycleGateway();
  });
  afterAll(() => gw.close());

  const load = (body: Record<string, unknown>) => gw.call('/v1/models/load', { verifiedOpToken: gw.tokenFor('model-load', body), ...body });
  const doc = (free: number) => ({
    models: { loaded: [], available: ['m-r', 'm-r2'] },
    resources: { gpuMemoryFreeMB: free, gpuIds: [0], gpuMemoryUsedMB: 80000 - free },
  });

  it('model-load target selection and GET /v1/capabilities use the fresh document', async () => {
    await createPool(gw, 'refresh-a');
    const opts = { provider: 'refresh-a', secret: POOL_SECRET, max_concurrent: 2, features: ['model_lifecycle', 'runner_capabilities'] };
    const a = await lifecycleWorker(gw, ['other-r'], { ...opts, runner_capabilities: doc(60000) });
    const b = await lifecycleWorker(gw, ['other-r'], { ...opts, runner_capabilities: doc(20000) });
    expect((await load({ modelId: 'm-r', pool: 'refresh-a', gpuMemoryBudgetMB: 30000 })).json.workers.map((w: any) => w.workerId)).toEqual([a.id]);

    // a's GPU filled up, b's emptied: the next load goes to b.
    a.worker.send({ type: 'runner_capabilities', runner_capabilities: doc(5000) });
    b.worker.send({ type: 'runner_capabilities', runner_capabilities: doc(70000) });
    await eventually(async () => {
      const caps = await (await fetch(`${gw.url}/v1/capabilities`)).json();
      const runners = caps.pools.find((p: any) => p.id === 'refresh-a').runners;
      return runners.every((r: any) => r.capabilities.resources.gpuMemoryFreeMB !== 60000 && r.capabilities.resources.gpuMemoryFreeMB !== 20000);
    });
    const second = await load({ modelId: 'm-r2', pool: 'refresh-a', gpuMemoryBudgetMB: 30000 });
    expect(second.status).toBe(202);
    expect(second.json.workers.map((w: any) => w.workerId)).toEqual([b.id]);
    for (const w of [a, b]) w.worker.close();
  });

  it('closes a worker that sends runner_capabilities without the negotiated feature (1002)', async () => {
    await createPool(gw, 'refresh-b');
    const { worker } = await lifecycleWorker(gw, ['x-r'], { provider: 'refresh-b', secret: POOL_SECRET, runner_capabilities: doc(1) });
    worker.send({ type: 'runner_capabilities', runner_capabilities: doc(2) });
    expect((await worker.closed).code).toBe(1002);
  });
});
