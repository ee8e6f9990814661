import { chat, eventually, post } from '../support/http';
import { auditRows, createPool, lifecycleWorker, LifecycleGateway, POOL_SECRET, report, startLifecycleGateway } from './support';

const SSE = (text: string) => `data: {"choices":[{"delta":{"content":"${text}"}}]}\n\n`;

describe('POST /v1/models/unload', () => {
  let gw: LifecycleGateway;
  beforeAll(async () => {
    gw = await startLifecycleGateway({ LIFECYCLE_UNLOAD_DRAIN_TIMEOUT_SECS: '1' });
  });
  afterAll(() => gw.close());

  const unload = (body: Record<string, unknown>) => gw.call('/v1/models/unload', { verifiedOpToken: gw.tokenFor('model-unload', body), ...body });
  const models = async (workerId: string): Promise<string[]> => (await gw.get(`/admin/workers/${workerId}`)).json.models;

  it('takes the model out of routing on the worker, lets a stream in flight finish intact, then unloads and answers', async () => {
    await createPool(gw, 'unload-a');
    const a = await lifecycleWorker(gw, ['m-a'], { provider: 'unload-a', secret: POOL_SECRET, worker_name: 'unload-a-1' });
    const stream = post(gw.url, '/v1/chat/completions', chat('m-a', { stream: true }));
    const req = await a.worker.next('request');
    a.worker.chunk(req.request_id, SSE('one '));
    const b = await lifecycleWorker(gw, ['m-a'], { provider: 'unload-a', secret: POOL_SECRET, worker_name: 'unload-a-2' });

    let answered = false;
    const unloading = unload({ modelId: 'm-a', workerId: a.id }).then((r) => {
      answered = true;
      return r;
    });
    await eventually(async () => (await auditRows(gw, 'operation=model-unload&outcome=accepted&limit=1')).length === 1);
    // Held out on a: new requests for the model go to b, the stream on a goes on.
    const other = post(gw.url, '/v1/chat/completions', chat('m-a'));
    const moved = await b.worker.next('request');
    b.worker.complete(moved.request_id, { served_by: 'b' });
    expect((await other).json).toEqual({ served_by: 'b' });
    expect(a.worker.count('request')).toBe(1);
    expect(a.worker.has('model_unload')).toBe(false);
    expect(answered).toBe(false);

    a.worker.chunk(req.request_id, SSE('two'));
    a.worker.send({ type: 'response_complete', request_id: req.request_id, status_code: 200 });
    const streamed = await stream;
    expect(streamed.status).toBe(200);
    expect(streamed.text).toBe(SSE('one ') + SSE('two'));

    const frame = await a.worker.next('model_unload');
    expect(frame).toEqual({ type: 'model_unload', task_id: expect.stringMatching(/^unload-/), model_id: 'm-a', verified_op_token: expect.any(String) });
    expect(answered).toBe(false);
    // As switchboard-worker does: the models it serves now, then the outcome.
    a.worker.send({ type: 'models_update', models: [], current_load: 0 });
    report(a.worker, frame.task_id, 'completed', { gpu_memory_freed_mb: 8200 });
    const res = await unloading;
    expect(res.status).toBe(200);
    expect(res.json).toEqual({
      modelId: 'm-a',
      workers: [{ workerId: a.id, name: 'unload-a-1', pool: 'unload-a', status: 'completed', progress: 1, gpuMemoryFreedMB: 8200 }],
      gpuMemoryFreedMB: 8200,
      kvCacheFlushed: true,
    });
    // The worker no longer serves it; b still does.
    expect(await models(a.id)).toEqual([]);
    expect(await models(b.id)).toEqual(['m-a']);
    const rows = await auditRows(gw, `task=${frame.task_id}`);
    expect(rows.map((r) => [r.outcome, r.status])).toEqual([
      ['completed', 200],
      ['accepted', 202],
    ]);
    a.worker.close();
    b.worker.close();
  });

  it('a pool-wide unload drains and unloads every worker serving the model, and adds up what they freed', async () => {
    await createPool(gw, 'unload-b');
    const one = await lifecycleWorker(gw, ['m-b', 'keep-b'], { provider: 'unload-b', secret: POOL_SECRET });
    const two = await lifecycleWorker(gw, ['m-b'], { provider: 'unload-b', secret: POOL_SECRET });
    const other = await lifecycleWorker(gw, ['keep-b'], { provider: 'unload-b', secret: POOL_SECRET });
    const unloading = unload({ modelId: 'm-b', pool: 'unload-b' });
    const f1 = await one.worker.next('model_unload');
    const f2 = await two.worker.next('model_unload');
    expect(f1.task_id).toBe(f2.task_id);
    one.worker.send({ type: 'models_update', models: ['keep-b'] });
    report(one.worker, f1.task_id, 'completed', { gpu_memory_freed_mb: 100 });
    report(two.worker, f2.task_id, 'completed', { gpu_memory_freed_mb: 250 });
    const res = await unloading;
    expect(res.json).toMatchObject({ modelId: 'm-b', gpuMemoryFreedMB: 350, kvCacheFlushed: true });
    expect(res.json.workers.map((w: any) => w.workerId).sort()).toEqual([one.id, two.id].sort());
    expect(other.worker.has('model_unload')).toBe(false);
    expect(await models(one.id)).toEqual(['keep-b']);
    for (const w of [one, two, other]) w.worker.close();
  });

  it("after a completed unload the worker's own model list decides: a backend that still serves the model on demand (Ollama) keeps getting its requests", async () => {
    const { worker, id } = await lifecycleWorker(gw, ['on-demand']);
    const unloading = unload({ modelId: 'on-demand', workerId: id });
    const frame = await worker.next('model_unload');
    worker.send({ type: 'models_update', models: ['on-demand'] });
    report(worker, frame.task_id, 'completed');
    expect((await unloading).status).toBe(200);
    // It still lists the model after the unload: asked to read its models again, its answer decides.
    expect(await worker.next('models_refresh')).toEqual({ type: 'models_refresh', reason: 'lifecycle' });
    worker.send({ type: 'models_update', models: ['on-demand'] });
    const next = post(gw.url, '/v1/chat/completions', chat('on-demand'));
    const req = await worker.next('request');
    worker.complete(req.request_id, { reloaded: true });
    expect((await next).json).toEqual({ reloaded: true });
    worker.close();
  });

  it('at the drain deadline the unload fails and nothing is cut: no model_unload is sent, the request finishes, the model serves again', async () => {
    const { worker, id } = await lifecycleWorker(gw, ['m-c']);
    const slow = post(gw.url, '/v1/chat/completions', chat('m-c'));
    const req = await worker.next('request');
    const res = await unload({ modelId: 'm-c', workerId: id });
    expect(res.status).toBe(502);
    expect(res.json.error).toMatchObject({
      code: 'lifecycle_failed',
      workers: [{ workerId: id, status: 'failed', error: expect.stringMatching(/^drain_timeout: /) }],
    });
    expect(worker.has('model_unload')).toBe(false);
    worker.complete(req.request_id, { finished: true });
    expect((await slow).json).toEqual({ finished: true });
    const again = post(gw.url, '/v1/chat/completions', chat('m-c'));
    const next = await worker.next('request');
    worker.complete(next.request_id, { served: 'again' });
    expect((await again).json).toEqual({ served: 'again' });
    expect(await models(id)).toEqual(['m-c']);
    worker.close();
  });

  it('a worker that fails the unload, or disconnects during it, answers 502 lifecycle_failed; the model is routed again after a failure', async () => {
    const { worker, id } = await lifecycleWorker(gw, ['m-d']);
    const failing = unload({ modelId: 'm-d', workerId: id });
    const frame = await worker.next('model_unload');
    report(worker, frame.task_id, 'failed', { error: 'model is pinned' });
    const res = await failing;
    expect(res.status).toBe(502);
    expect(res.json.error.workers).toEqual([
      { workerId: id, name: expect.any(String), pool: 'local', status: 'failed', progress: 0, error: 'failed: model is pinned' },
    ]);
    const again = post(gw.url, '/v1/chat/completions', chat('m-d'));
    const next = await worker.next('request');
    worker.complete(next.request_id, { ok: 1 });
    expect((await again).status).toBe(200);

    const leaving = unload({ modelId: 'm-d', workerId: id });
    await worker.next('model_unload');
    worker.kill();
    const gone = await leaving;
    expect(gone.status).toBe(502);
    expect(gone.json.error.workers[0].error).toMatch(/^worker_disconnected: /);
  });

  it('refuses: no worker serving the model 404, a worker without the feature 422, the same unload running 409', async () => {
    await createPool(gw, 'unload-e');
    const { worker, id } = await lifecycleWorker(gw, ['m-e'], { provider: 'unload-e', secret: POOL_SECRET });
    const legacy = await lifecycleWorker(gw, ['m-e2'], { provider: 'unload-e', secret: POOL_SECRET, features: [] });
    expect((await unload({ modelId: 'nobody-serves', pool: 'unload-e' })).json.error).toMatchObject({ code: 'model_not_found' });
    expect((await unload({ modelId: 'm-e2', workerId: id })).json.error).toMatchObject({
      code: 'model_not_found',
      message: expect.stringContaining('is not served by worker'),
    });
    expect((await unload({ modelId: 'm-e2', pool: 'unload-e' })).json.error.code).toBe('lifecycle_unsupported');
    expect(legacy.worker.has('model_unload')).toBe(false);

    const inFlight = post(gw.url, '/v1/chat/completions', chat('m-e'));
    const req = await worker.next('request');
    const first = unload({ modelId: 'm-e', workerId: id });
    await eventually(async () => (await auditRows(gw, 'model=m-e&outcome=accepted')).length === 1);
    const second = await unload({ modelId: 'm-e', workerId: id });
    expect(second.status).toBe(409);
    const [accepted] = await auditRows(gw, 'model=m-e&outcome=accepted');
    expect(second.json.error.task_id).toBe(accepted.task_id);
    worker.complete(req.request_id, {});
    await inFlight;
    report(worker, (await worker.next('model_unload')).task_id, 'completed');
    expect((await first).status).toBe(200);
    worker.close();
    legacy.worker.close();
  });
});
