/**
 * Contract: "Workers may also send models_update when their local model catalog changes" and the
 * server may ask with models_refresh — routing follows the update immediately, queued work for a
 * newly advertised model is pulled, and the sanitization rules apply again.
 */
import { useScope } from './support/scope';
import { chatBody, uniqueModel, waitUntil } from './support/util';

describe('models_update / models_refresh', () => {
  const scope = useScope();

  test('models_update adding a model pulls queued work for it immediately', async () => {
    const [m1, m2] = [uniqueModel('mu1'), uniqueModel('mu2')];
    const p = await scope.provider({ models: [m2], queue_timeout_secs: 20 }, 'mu');
    const w = await scope.worker({ models: [m1] }, { provider: p.name, secret: p.secret });
    const x = scope.post('/v1/chat/completions', chatBody(m2));
    await scope.admin.waitQueueDepth(p.name, 1);
    expect(w.requests()).toHaveLength(0);
    // No pongs from here on: the update itself must hand over the queued request.
    w.autoPong = false;
    w.modelsUpdate([m1, m2], 0);
    const req = await w.nextRequest();
    w.autoPong = true;
    expect(req.model).toBe(m2);
    w.respondJson(req.request_id, { model: m2 });
    expect((await x.done).json()).toEqual({ model: m2 });
  });

  test('models_update removing a model stops routing it to that worker at once', async () => {
    const [keep, drop] = [uniqueModel('keep'), uniqueModel('drop')];
    // The provider lists both: its `models` are also the allow-list of what its workers may serve.
    const p = await scope.provider({ models: [keep, drop], queue_timeout_secs: 0.5 }, 'mudrop');
    const w = await scope.worker({ models: [keep, drop] }, { provider: p.name, secret: p.secret });
    w.modelsUpdate([keep], 0);
    // The update is applied before later frames: wait until /v1/models reflects it.
    await waitUntil(async () => {
      const ids = (await scope.request('/v1/models').done).json().data.map((m: { id: string }) => m.id);
      return !ids.includes(drop) && ids.includes(keep);
    }, '/v1/models to drop the removed model');
    const res = await scope.post('/v1/chat/completions', chatBody(drop)).done;
    expect(res.status).toBe(504);
    expect(w.requests()).toHaveLength(0);
    const ok = scope.post('/v1/chat/completions', chatBody(keep));
    const req = await w.nextRequest();
    expect(req.model).toBe(keep);
    w.respondJson(req.request_id, {});
    expect((await ok.done).status).toBe(200);
  });

  test('models_update is sanitized like register (trim, drop empties, de-duplicate, cap)', async () => {
    const p = await scope.provider({ max_models: 2 }, 'musan');
    const [a, b, c] = [uniqueModel('a'), uniqueModel('b'), uniqueModel('c')];
    const w = await scope.worker({ models: [a] }, { provider: p.name, secret: p.secret });
    w.modelsUpdate([` ${b} `, '', b, a, c], 0);
    await waitUntil(
      async () => JSON.stringify((await scope.admin.worker(w.workerId))?.models) === JSON.stringify([b, a]),
      'sanitized models on the worker',
      5_000,
    ).catch(async () => {
      throw new Error(`admin shows models ${JSON.stringify((await scope.admin.worker(w.workerId))?.models)}, expected ${JSON.stringify([b, a])}`);
    });
    const ids = (await scope.request('/v1/models').done).json().data.map((m: { id: string }) => m.id);
    expect(ids).toEqual(expect.arrayContaining([a, b]));
    expect(ids).not.toContain(c);
  });

  test('the admin API asks a worker to re-report its models with models_refresh; its answer takes effect', async () => {
    const [m1, m2] = [uniqueModel('rf1'), uniqueModel('rf2')];
    const w = await scope.worker({ models: [m1] });
    const res = await scope.admin.refreshModels(w.workerId);
    expect(res.status).toBe(202);
    const refresh = await w.next('models_refresh');
    expect(refresh.type).toBe('models_refresh');
    if (refresh.reason !== undefined) expect(typeof refresh.reason).toBe('string');
    w.modelsUpdate([m1, m2], 0);
    await waitUntil(
      async () => (await scope.request('/v1/models').done).json().data.some((m: { id: string }) => m.id === m2),
      '/v1/models to list the refreshed model',
    );
    const x = scope.post('/v1/chat/completions', chatBody(m2));
    const req = await w.nextRequest();
    expect(req.model).toBe(m2);
    w.respondJson(req.request_id, {});
    expect((await x.done).status).toBe(200);
  });
});
