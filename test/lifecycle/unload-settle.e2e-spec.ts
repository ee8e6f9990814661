import { chat, eventually, post } from '../support/http';
import { createPool, lifecycleWorker, LifecycleGateway, POOL_SECRET, report, startLifecycleGateway } from './support';

/** After an unload ends, the model stays out of routing on the worker until its model list can be trusted. */
describe('unload: the hold after the operation ends', () => {
  let gw: LifecycleGateway;
  beforeAll(async () => {
    gw = await startLifecycleGateway({ LIFECYCLE_OPERATION_TIMEOUT_SECS: '0.5' });
  });
  afterAll(() => gw.close());

  const unload = (modelId: string, workerId: string) =>
    gw.call('/v1/models/unload', { verifiedOpToken: gw.token({ operation: 'model-unload', modelId, workerId }), modelId, workerId });
  const queued = async (pool: string): Promise<number> => (await gw.get('/admin/providers')).json.data.find((p: any) => p.name === pool).queue_depth;
  const models = async (workerId: string): Promise<string[]> => (await gw.get(`/admin/workers/${workerId}`)).json.models;

  it('timed out (the worker may still be unloading): held until the worker reports how it ended, whatever models it lists meanwhile', async () => {
    await createPool(gw, 'settle-a', { queue_timeout_secs: 30 });
    const { worker, id } = await lifecycleWorker(gw, ['m-t'], { provider: 'settle-a', secret: POOL_SECRET });
    const unloading = unload('m-t', id);
    const frame = await worker.next('model_unload');
    const res = await unloading;
    expect(res.status).toBe(502);
    expect(res.json.error.workers[0].error).toMatch(/^timeout: /);

    const waiting = post(gw.url, '/v1/chat/completions', chat('m-t'));
    await eventually(async () => (await queued('settle-a')) === 1);
    // A list read while the unload runs on still names the model: not a reason to route to it.
    worker.send({ type: 'models_update', models: ['m-t', 'marker-t'] });
    await eventually(async () => (await models(id)).includes('marker-t'));
    expect(await queued('settle-a')).toBe(1);
    expect(worker.count('request')).toBe(0);

    // The late answer: it failed, so the worker still serves the model, and the waiting request goes to it.
    report(worker, frame.task_id, 'failed', { error: 'model is pinned' });
    const req = await worker.next('request');
    worker.complete(req.request_id, { served: 'after the late answer' });
    expect((await waiting).json).toEqual({ served: 'after the late answer' });
    worker.close();
  });

  it('timed out, then completed late: the worker is asked for its models, and its answer decides', async () => {
    await createPool(gw, 'settle-b', { queue_timeout_secs: 30 });
    const { worker, id } = await lifecycleWorker(gw, ['m-l'], { provider: 'settle-b', secret: POOL_SECRET });
    const unloading = unload('m-l', id);
    const frame = await worker.next('model_unload');
    expect((await unloading).status).toBe(502);
    const waiting = post(gw.url, '/v1/chat/completions', chat('m-l'));
    await eventually(async () => (await queued('settle-b')) === 1);

    report(worker, frame.task_id, 'completed');
    expect(await worker.next('models_refresh')).toEqual({ type: 'models_refresh', reason: 'lifecycle' });
    expect(await queued('settle-b')).toBe(1);
    expect(worker.count('request')).toBe(0);
    // Its backend serves the model on demand (Ollama): it lists it, and routing follows that.
    worker.send({ type: 'models_update', models: ['m-l'] });
    const req = await worker.next('request');
    worker.complete(req.request_id, { served: 'on demand' });
    expect((await waiting).json).toEqual({ served: 'on demand' });
    worker.close();
  });

  it('completed without a models_update first: held until the worker answers the models_refresh it is sent', async () => {
    await createPool(gw, 'settle-c', { queue_timeout_secs: 1 });
    const { worker, id } = await lifecycleWorker(gw, ['m-c', 'keep-c'], { provider: 'settle-c', secret: POOL_SECRET });
    const unloading = unload('m-c', id);
    report(worker, (await worker.next('model_unload')).task_id, 'completed', { gpu_memory_freed_mb: 4000 });
    expect((await unloading).status).toBe(200);
    await worker.next('models_refresh');

    const waiting = post(gw.url, '/v1/chat/completions', chat('m-c'));
    await eventually(async () => (await queued('settle-c')) === 1);
    expect(worker.count('request')).toBe(0);
    worker.send({ type: 'models_update', models: ['keep-c'] });
    await eventually(async () => (await models(id)).join() === 'keep-c');
    // Nobody serves m-c any more: the request never reached the worker that unloaded it.
    expect((await waiting).json.error.code).toBe('queue_timeout');
    expect(worker.count('request')).toBe(0);
    worker.close();
  });
});
