/**
 * Contract: "Queueing when no worker is immediately available" — bounded, FIFO among compatible
 * requests, queue-full 429 with backpressure hints, queue timeout 504 without ever reaching a
 * worker, unknown model 404 without queueing.
 */
import { expectAnthropicError, expectOpenAiError } from './support/expect-error';
import { useScope } from './support/scope';
import { chatBody, messagesBody, uniqueModel, waitUntil } from './support/util';

describe('queueing', () => {
  const scope = useScope();

  test('requests wait in the queue and are served in FIFO order when a worker arrives', async () => {
    const model = uniqueModel('fifo');
    const p = await scope.provider({ models: [model], max_queue_len: 10, queue_timeout_secs: 20 }, 'fifo');
    const xs = [];
    for (let i = 0; i < 4; i++) {
      xs.push(scope.post('/v1/chat/completions', chatBody(model, { seq: i })));
      await scope.admin.waitQueueDepth(p.name, i + 1);
    }
    const w = await scope.worker({ models: [model], max_concurrent: 1 }, { provider: p.name, secret: p.secret });
    const order: number[] = [];
    for (let i = 0; i < 4; i++) {
      const req = await w.nextRequest();
      order.push(JSON.parse(req.body).seq);
      w.respondJson(req.request_id, { seq: JSON.parse(req.body).seq });
    }
    expect(order).toEqual([0, 1, 2, 3]);
    for (let i = 0; i < 4; i++) expect((await xs[i].done).json()).toEqual({ seq: i });
  });

  test('FIFO among compatible requests: a worker takes the oldest request for its models, skipping others', async () => {
    const [mx, my] = [uniqueModel('fx'), uniqueModel('fy')];
    const p = await scope.provider({ models: [mx, my], max_queue_len: 10, queue_timeout_secs: 20 }, 'compat');
    const x0 = scope.post('/v1/chat/completions', chatBody(mx, { seq: 'x0' }));
    await scope.admin.waitQueueDepth(p.name, 1);
    const y1 = scope.post('/v1/chat/completions', chatBody(my, { seq: 'y1' }));
    await scope.admin.waitQueueDepth(p.name, 2);
    const y2 = scope.post('/v1/chat/completions', chatBody(my, { seq: 'y2' }));
    await scope.admin.waitQueueDepth(p.name, 3);
    const wy = await scope.worker({ models: [my], max_concurrent: 1 }, { provider: p.name, secret: p.secret }, 'Y');
    const first = await wy.nextRequest();
    expect(JSON.parse(first.body).seq).toBe('y1');
    wy.respondJson(first.request_id, { seq: 'y1' });
    const second = await wy.nextRequest();
    expect(JSON.parse(second.body).seq).toBe('y2');
    wy.respondJson(second.request_id, { seq: 'y2' });
    expect((await y1.done).json()).toEqual({ seq: 'y1' });
    expect((await y2.done).json()).toEqual({ seq: 'y2' });
    expect(wy.requests().map((r) => r.model)).toEqual([my, my]);
    const wx = await scope.worker({ models: [mx] }, { provider: p.name, secret: p.secret }, 'X');
    const rx = await wx.nextRequest();
    wx.respondJson(rx.request_id, { seq: 'x0' });
    expect((await x0.done).json()).toEqual({ seq: 'x0' });
  });

  test('the queue is bounded: a full queue answers 429 queue_full with Retry-After, X-Backoff-Ms and advisory JSON fields', async () => {
    const model = uniqueModel('full');
    const p = await scope.provider({ models: [model], max_queue_len: 2, queue_timeout_secs: 20 }, 'full');
    scope.post('/v1/chat/completions', chatBody(model));
    scope.post('/v1/chat/completions', chatBody(model));
    await scope.admin.waitQueueDepth(p.name, 2);
    const res = await scope.post('/v1/chat/completions', chatBody(model)).done;
    const err = expectOpenAiError(res, 429, 'queue_full');
    expect(err.message).toContain('Service temporarily at capacity');
    expect(err.retriable).toBe(true);
    expect(typeof err.policy_label).toBe('string');
    expect(err.policy_label.length).toBeGreaterThan(0);
    expect(Number.isInteger(err.retry_after_ms)).toBe(true);
    expect(err.retry_after_ms).toBeGreaterThan(0);
    expect(String(res.headers['retry-after'])).toMatch(/^\d+$/);
    expect(String(res.headers['x-backoff-ms'])).toMatch(/^\d+$/);
    expect(Number(res.headers['x-backoff-ms'])).toBe(err.retry_after_ms);
    expect((await scope.admin.provider(p.name)).queue_depth).toBe(2);
  });

  test('queue_full in the Anthropic dialect on /v1/messages', async () => {
    const model = uniqueModel('fullant');
    const p = await scope.provider({ models: [model], max_queue_len: 1, queue_timeout_secs: 20 }, 'fullant');
    scope.post('/v1/messages', messagesBody(model));
    await scope.admin.waitQueueDepth(p.name, 1);
    const res = await scope.post('/v1/messages', messagesBody(model)).done;
    const err = expectAnthropicError(res, 429, 'queue_full');
    expect(err.type).toBe('rate_limit_error');
    expect(err.retriable).toBe(true);
    expect(res.headers['retry-after']).toBeDefined();
    expect(res.headers['x-backoff-ms']).toBeDefined();
  });

  test('queue timeout answers 504 queue_timeout and the request never reaches a worker', async () => {
    const model = uniqueModel('qto');
    const p = await scope.provider({ models: [model], max_queue_len: 5, queue_timeout_secs: 0.5, request_timeout_secs: 20 }, 'qto');
    const res = await scope.post('/v1/chat/completions', chatBody(model, { marker: 'timed-out' })).done;
    const err = expectOpenAiError(res, 504, 'queue_timeout');
    expect(err.retriable).toBe(true);
    expect((await scope.admin.provider(p.name)).queue_depth).toBe(0);
    // A worker arriving afterwards gets the next (fresh) request first: the timed-out one is gone.
    const w = await scope.worker({ models: [model], max_concurrent: 1 }, { provider: p.name, secret: p.secret });
    const fresh = scope.post('/v1/chat/completions', chatBody(model, { marker: 'fresh' }));
    const req = await w.nextRequest();
    expect(JSON.parse(req.body).marker).toBe('fresh');
    w.respondJson(req.request_id, { ok: true });
    expect((await fresh.done).status).toBe(200);
    expect(w.requests().map((r) => JSON.parse(r.body).marker)).toEqual(['fresh']);
    expect(w.all('cancel')).toHaveLength(0);
  });

  test('queue timeout while every worker is busy: 504 queue_timeout; the busy worker never receives the request', async () => {
    const model = uniqueModel('busyq');
    const p = await scope.provider({ models: [model], queue_timeout_secs: 0.5, request_timeout_secs: 20 }, 'busyq');
    const w = await scope.worker({ models: [model], max_concurrent: 1 }, { provider: p.name, secret: p.secret });
    const first = scope.post('/v1/chat/completions', chatBody(model, { marker: 'first' }));
    const r1 = await w.nextRequest();
    const res = await scope.post('/v1/chat/completions', chatBody(model, { marker: 'second' })).done;
    expectOpenAiError(res, 504, 'queue_timeout');
    w.respondJson(r1.request_id, { ok: true });
    expect((await first.done).status).toBe(200);
    expect(w.requests().map((r) => JSON.parse(r.body).marker)).toEqual(['first']);
    expect(w.all('cancel')).toHaveLength(0);
  });

  test('an unknown model answers 404 model_not_found ("Model \'x\' not found") instead of queueing', async () => {
    const model = uniqueModel('unknown');
    const res = await scope.post('/v1/chat/completions', chatBody(model)).done;
    const err = expectOpenAiError(res, 404, 'model_not_found');
    expect(err.message).toBe(`Model '${model}' not found`);
    expect(err.retriable).toBe(false);
    const depth = (await scope.admin.providers()).reduce((n, pr) => n + pr.queue_depth, 0);
    expect(depth).toBe(0);
  });

  test('an unknown model on /v1/messages answers 404 in the Anthropic dialect', async () => {
    const model = uniqueModel('unknown-ant');
    const res = await scope.post('/v1/messages', messagesBody(model)).done;
    const err = expectAnthropicError(res, 404, 'model_not_found');
    expect(err.type).toBe('not_found_error');
    expect(err.message).toBe(`Model '${model}' not found`);
  });

  test('a model a provider declares queues while no worker serves it; registration itself pulls the queued request', async () => {
    const model = uniqueModel('declared');
    const p = await scope.provider({ models: [model], queue_timeout_secs: 20 }, 'decl');
    const x = scope.post('/v1/chat/completions', chatBody(model));
    await scope.admin.waitQueueDepth(p.name, 1);
    const w = await scope.connect({ provider: p.name, secret: p.secret });
    // No pongs: only the registration can hand the queued request to this worker.
    w.autoPong = false;
    await w.register({ models: [model] });
    const req = await w.nextRequest();
    w.autoPong = true;
    w.respondJson(req.request_id, { ok: 1 });
    expect((await x.done).json()).toEqual({ ok: 1 });
    await waitUntil(async () => (await scope.admin.provider(p.name)).queue_depth === 0, 'queue to drain');
  });
});
