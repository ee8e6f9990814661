import { createPool, lifecycleWorker, LifecycleGateway, POOL_SECRET, report, startLifecycleGateway } from './support';

describe('POST /v1/cache/flush', () => {
  let gw: LifecycleGateway;
  beforeAll(async () => {
    gw = await startLifecycleGateway();
  });
  afterAll(() => gw.close());

  const flush = (body: Record<string, unknown>) =>
    gw.call('/v1/cache/flush', {
      verifiedOpToken: gw.tokenFor('cache-flush', body),
      ...body,
    });

  it('scope all goes to every worker of the pool that negotiated model_lifecycle, and adds up their answers', async () => {
    await createPool(gw, 'flush-a');
    const one = await lifecycleWorker(gw, ['m-1'], { provider: 'flush-a', secret: POOL_SECRET });
    const two = await lifecycleWorker(gw, ['m-2'], { provider: 'flush-a', secret: POOL_SECRET });
    const legacy = await lifecycleWorker(gw, ['m-1'], { provider: 'flush-a', secret: POOL_SECRET, features: [] });
    const elsewhere = await lifecycleWorker(gw, ['m-1']);
    const flushing = flush({ scope: 'all', pool: 'flush-a' });
    const f1 = await one.worker.next('cache_flush');
    const f2 = await two.worker.next('cache_flush');
    expect(f1).toEqual({ type: 'cache_flush', task_id: expect.stringMatching(/^flush-/), scope: 'all', verified_op_token: expect.any(String) });
    report(one.worker, f1.task_id, 'completed', { entries_removed: 1000, memory_freed_mb: 3000 });
    report(two.worker, f2.task_id, 'completed', { entries_removed: 234, memory_freed_mb: 500 });
    const res = await flushing;
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ flushed: true, entriesRemoved: 1234, memoryFreedMB: 3500 });
    expect(res.json.workers.map((w: any) => w.workerId).sort()).toEqual([one.id, two.id].sort());
    expect(legacy.worker.has('cache_flush')).toBe(false);
    expect(elsewhere.worker.has('cache_flush')).toBe(false);
    for (const w of [one, two, legacy, elsewhere]) w.worker.close();
  });

  it('scope model reaches only the workers serving the model; tenant and tag scopes carry their target', async () => {
    await createPool(gw, 'flush-b');
    const serving = await lifecycleWorker(gw, ['m-b'], { provider: 'flush-b', secret: POOL_SECRET });
    const notServing = await lifecycleWorker(gw, ['other-b'], { provider: 'flush-b', secret: POOL_SECRET });
    const byModel = flush({ scope: 'model', modelId: 'm-b', pool: 'flush-b' });
    const frame = await serving.worker.next('cache_flush');
    expect(frame).toMatchObject({ scope: 'model', model_id: 'm-b' });
    report(serving.worker, frame.task_id, 'completed');
    expect((await byModel).json).toEqual({ flushed: true, workers: [expect.objectContaining({ workerId: serving.id, status: 'completed' })] });
    expect(notServing.worker.has('cache_flush')).toBe(false);

    const byTenant = gw.call('/v1/cache/flush', {
      scope: 'tenant',
      tenantId: 'community-x',
      modelId: null,
      workerId: notServing.id,
      verifiedOpToken: gw.token({ operation: 'cache-flush', scope: 'tenant', tenantId: 'community-x', workerId: notServing.id }),
    });
    const t = await notServing.worker.next('cache_flush');
    expect(t).toMatchObject({ scope: 'tenant', tenant_id: 'community-x' });
    expect(t).not.toHaveProperty('model_id');
    report(notServing.worker, t.task_id, 'completed', { entries_removed: 7 });
    expect((await byTenant).json).toMatchObject({ flushed: true, entriesRemoved: 7 });

    const byTag = gw.call('/v1/cache/flush', {
      scope: 'tag',
      tag: 'batch-42',
      workerId: serving.id,
      verifiedOpToken: gw.token({ operation: 'cache-flush', scope: 'tag', tag: 'batch-42', workerId: serving.id }),
    });
    const g = await serving.worker.next('cache_flush');
    expect(g).toMatchObject({ scope: 'tag', tag: 'batch-42' });
    report(serving.worker, g.task_id, 'unsupported', { error: 'llama-server cannot flush by tag' });
    const refused = await byTag;
    expect(refused.status).toBe(502);
    expect(refused.json.error).toMatchObject({
      code: 'lifecycle_failed',
      workers: [{ status: 'unsupported', error: 'unsupported: llama-server cannot flush by tag' }],
    });
    serving.worker.close();
    notServing.worker.close();
  });

  it('validates the scope: model needs modelId, tenant needs tenantId, tag needs tag, and nothing else goes with a scope', async () => {
    const { worker } = await lifecycleWorker(gw, ['m-c']);
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ scope: 'model' }, 'modelId'],
      [{ scope: 'tenant' }, 'tenantId'],
      [{ scope: 'tag' }, 'tag'],
      [{ scope: 'all', tenantId: 'x' }, 'tenantId'],
      [{ scope: 'everything' }, 'scope'],
    ];
    for (const [body, field] of cases) {
      const res = await gw.call('/v1/cache/flush', { ...body, verifiedOpToken: gw.token({ operation: 'cache-flush', scope: 'all' }) });
      expect([JSON.stringify(body), res.status, res.json.error.code, res.json.error.fields.map((f: any) => f.field)]).toEqual([
        JSON.stringify(body),
        422,
        'validation_failed',
        [field],
      ]);
    }
    expect(worker.has('cache_flush')).toBe(false);
    worker.close();
  });

  it('a token signed for another scope or tenant is refused (403 op_token_mismatch) before anything is sent', async () => {
    const { worker } = await lifecycleWorker(gw, ['m-d']);
    const wrongScope = await gw.call('/v1/cache/flush', {
      scope: 'all',
      verifiedOpToken: gw.token({ operation: 'cache-flush', scope: 'tenant', tenantId: 'a' }),
    });
    expect([wrongScope.status, wrongScope.json.error.code]).toEqual([403, 'op_token_mismatch']);
    const wrongTenant = await gw.call('/v1/cache/flush', {
      scope: 'tenant',
      tenantId: 'b',
      verifiedOpToken: gw.token({ operation: 'cache-flush', scope: 'tenant', tenantId: 'a' }),
    });
    expect(wrongTenant.json.error.message).toBe("verifiedOpToken was signed for tenantId 'a', not 'b'");
    const loadToken = await gw.call('/v1/cache/flush', { scope: 'all', verifiedOpToken: gw.token({ operation: 'model-load', modelId: 'm-d' }) });
    expect(loadToken.json.error.message).toBe("verifiedOpToken was signed for operation 'model-load', not 'cache-flush'");
    expect(worker.has('cache_flush')).toBe(false);
    worker.close();
  });
});
