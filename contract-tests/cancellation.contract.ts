/**
 * Contract: "Client cancellation propagation end to end" — a vanished client removes queued
 * work, or sends exactly one best-effort cancel{client_disconnect} to the worker; late chunks
 * after cancellation are dropped without harming the worker connection; the slot is released.
 */
import { useScope } from './support/scope';
import { target } from './support/target';
import { chatBody, sleep, uniqueModel, waitUntil } from './support/util';

/** Long enough for a duplicate cancel or a protocol-error close to show up. */
const SETTLE_MS = () => Math.max(1_000, 3 * target().heartbeatIntervalMs);

describe('client cancellation', () => {
  const scope = useScope();

  test('a client that disconnects while queued is removed from the queue; a worker arriving later gets nothing for it', async () => {
    const model = uniqueModel('cq');
    const p = await scope.provider({ models: [model], queue_timeout_secs: 20, max_queue_len: 5 }, 'cq');
    const gone = scope.post('/v1/chat/completions', chatBody(model, { marker: 'gone' }));
    await scope.admin.waitQueueDepth(p.name, 1);
    gone.abort();
    await scope.admin.waitQueueDepth(p.name, 0);
    const w = await scope.worker({ models: [model], max_concurrent: 1 }, { provider: p.name, secret: p.secret });
    const fresh = scope.post('/v1/chat/completions', chatBody(model, { marker: 'fresh' }));
    const req = await w.nextRequest();
    expect(JSON.parse(req.body).marker).toBe('fresh');
    w.respondJson(req.request_id, { ok: true });
    expect((await fresh.done).status).toBe(200);
    expect(w.requests().map((r) => JSON.parse(r.body).marker)).toEqual(['fresh']);
  });

  test.each([
    ['non-streaming', false],
    ['streaming', true],
  ])('a client that disconnects in flight (%s) makes the worker receive exactly one cancel{client_disconnect}', async (_label, stream) => {
    const model = uniqueModel('cf');
    const w = await scope.worker({ models: [model] });
    const x = scope.post('/v1/chat/completions', chatBody(model, { stream }));
    const req = await w.nextRequest();
    if (stream) {
      w.chunk(req.request_id, 'data: {"partial":1}\n\n');
      await x.waitForText((t) => t.includes('partial'));
    }
    x.abort();
    const cancel = await w.next('cancel');
    expect(cancel).toEqual(expect.objectContaining({ type: 'cancel', request_id: req.request_id, reason: 'client_disconnect' }));
    await sleep(SETTLE_MS());
    expect(w.all('cancel')).toHaveLength(1);
  });

  test('late chunks and completion after a cancel are dropped; the worker connection stays open and keeps serving', async () => {
    const model = uniqueModel('late');
    const w = await scope.worker({ models: [model], max_concurrent: 1 });
    const x = scope.post('/v1/chat/completions', chatBody(model, { stream: true }));
    const req = await w.nextRequest();
    w.chunk(req.request_id, 'data: {"n":1}\n\n');
    await x.waitForText((t) => t.includes('"n":1'));
    x.abort();
    await w.next('cancel', (f) => f.request_id === req.request_id);
    // The worker had not seen the cancel yet and keeps producing.
    w.chunk(req.request_id, 'data: {"n":2}\n\n');
    w.chunk(req.request_id, 'data: [DONE]\n\n');
    w.complete(req.request_id, { status: 200 });
    const pingsBefore = w.all('ping').length;
    await sleep(SETTLE_MS());
    expect(w.isOpen).toBe(true);
    expect(w.closeInfo).toBeUndefined();
    expect(w.all('ping').length).toBeGreaterThan(pingsBefore);
    const next = scope.post('/v1/chat/completions', chatBody(model, { marker: 'next' }));
    const req2 = await w.nextRequest();
    expect(JSON.parse(req2.body).marker).toBe('next');
    w.respondJson(req2.request_id, { next: true });
    const res = await next.done;
    expect(res.json()).toEqual({ next: true });
  });

  test('a cancelled request does not hold the worker slot forever even if the worker never sends response_complete', async () => {
    const model = uniqueModel('slot');
    const w = await scope.worker({ models: [model], max_concurrent: 1 });
    const x = scope.post('/v1/chat/completions', chatBody(model));
    const req = await w.nextRequest();
    x.abort();
    await w.next('cancel', (f) => f.request_id === req.request_id);
    // Like the deployed daemon: abort silently; pongs now report load 0.
    expect(w.active.size).toBe(0);
    const next = scope.post('/v1/chat/completions', chatBody(model, { marker: 'after-cancel' }));
    const req2 = await w.next('request', () => true, Math.max(15_000, 4 * target().heartbeatTimeoutMs));
    expect(JSON.parse(req2.body).marker).toBe('after-cancel');
    w.respondJson(req2.request_id, { ok: true });
    expect((await next.done).status).toBe(200);
  });

  test('after a client disconnect the request is not requeued to another worker', async () => {
    const model = uniqueModel('noreq');
    const a = await scope.worker({ models: [model], max_concurrent: 1 }, {}, 'A');
    const x = scope.post('/v1/chat/completions', chatBody(model));
    const req = await a.nextRequest();
    x.abort();
    await a.next('cancel', (f) => f.request_id === req.request_id);
    const b = await scope.worker({ models: [model], max_concurrent: 1 }, {}, 'B');
    a.terminate();
    await sleep(SETTLE_MS());
    expect(b.requests()).toHaveLength(0);
    await waitUntil(async () => (await scope.admin.provider(target().defaultProvider))?.queue_depth === 0, 'empty default queue');
  });
});
