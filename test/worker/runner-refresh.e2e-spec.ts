import { useWorkerHarness } from './support/harness';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Issue 22: the daemon re-reads its runner document (seed: every 5 s) and sends it only when it changed. */
describe('worker daemon: runner document refresh', () => {
  const { env, startWorker } = useWorkerHarness();
  const fast = { runnerRefreshMs: 25 };
  let doc: Record<string, unknown>;
  beforeEach(() => {
    env.backend.models = ['rk'];
    doc = { runnerId: 'r1', resources: { gpuMemoryTotalMB: 81920, gpuMemoryUsedMB: 58000, gpuMemoryFreeMB: 23920 } };
    env.backend.routes.set('GET /v1/capabilities', () => ({ status: 200, json: doc }));
  });

  it('asks for runner_capabilities and sends the document again only when it changed', async () => {
    env.gateway.ackFeatures = ['runner_capabilities'];
    startWorker({ probe: true, models: ['rk'] }, fast);
    const conn = await env.gateway.connection(1);
    expect((await conn.next('register')).features).toContain('runner_capabilities');
    await sleep(150); // several refreshes of an unchanged document: nothing sent
    expect(conn.frames.filter((f) => f.type === 'runner_capabilities')).toEqual([]);
    doc = { resources: { gpuMemoryFreeMB: 1000, gpuMemoryUsedMB: 80920, gpuMemoryTotalMB: 81920 }, runnerId: 'r1' };
    const update = await conn.next('runner_capabilities');
    expect(update.runner_capabilities).toEqual(doc);
    await sleep(150);
    expect(conn.frames.filter((f) => f.type === 'runner_capabilities')).toHaveLength(1);
  });

  it('never sends runner_capabilities to a gateway that did not accept the feature', async () => {
    env.gateway.ackFeatures = ['response_start'];
    startWorker({ probe: true, models: ['rk'] }, fast);
    const conn = await env.gateway.connection(1);
    await conn.next('register');
    doc = { runnerId: 'r2' };
    await sleep(150);
    expect(conn.frames.filter((f) => f.type === 'runner_capabilities')).toEqual([]);
  });
});
