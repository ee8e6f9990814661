/**
 * Contract: "Graceful shutdown and drain semantics" — an admin-triggered drain sends
 * graceful_shutdown, stops new work for the worker, lets in-flight work finish and then closes
 * 1000 "graceful shutdown complete"; past the deadline in-flight requests fail 503 drain_timeout
 * and the worker is closed 1000 "graceful shutdown timed out".
 */
import { expectOpenAiError } from './support/expect-error';
import { useScope } from './support/scope';
import { chatBody, uniqueModel } from './support/util';

describe('graceful drain (admin API)', () => {
  const scope = useScope();

  test('an idle worker gets graceful_shutdown{reason, drain_timeout_secs} and is closed 1000 "graceful shutdown complete"', async () => {
    const w = await scope.worker({ models: [uniqueModel('idle')] });
    const res = await scope.admin.drain(w.workerId, { timeout_secs: 5, reason: 'maintenance' });
    expect(res.status).toBe(202);
    const frame = await w.next('graceful_shutdown');
    expect(frame).toEqual(expect.objectContaining({ type: 'graceful_shutdown', reason: 'maintenance', drain_timeout_secs: 5 }));
    const closed = await w.closed;
    expect({ code: closed.code, reason: closed.reason }).toEqual({ code: 1000, reason: 'graceful shutdown complete' });
  });

  test('a busy worker finishes its in-flight request, gets no new work while draining, then is closed "graceful shutdown complete"', async () => {
    const model = uniqueModel('busy');
    const a = await scope.worker({ models: [model], max_concurrent: 4 }, {}, 'A');
    const x1 = scope.post('/v1/chat/completions', chatBody(model, { seq: 1 }));
    const r1 = await a.nextRequest();
    expect((await scope.admin.drain(a.workerId, { timeout_secs: 20, reason: 'maintenance' })).status).toBe(202);
    await a.next('graceful_shutdown');
    // New work while A (the model's only worker) drains: 503 no_healthy_worker with a retry hint.
    const refused = await scope.post('/v1/chat/completions', chatBody(model, { seq: 0 })).done;
    expect(refused.status).toBe(503);
    expect(refused.json().error).toMatchObject({ code: 'no_healthy_worker', retriable: true });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    // Once another worker serves the model, new work goes to it, never to the draining A.
    const b = await scope.worker({ models: [model] }, {}, 'B');
    const x2 = scope.post('/v1/chat/completions', chatBody(model, { seq: 2 }));
    const r2 = await b.nextRequest();
    expect(JSON.parse(r2.body).seq).toBe(2);
    b.respondJson(r2.request_id, { by: 'B' });
    expect((await x2.done).json()).toEqual({ by: 'B' });
    expect(a.isOpen).toBe(true);
    a.respondJson(r1.request_id, { by: 'A' });
    const res1 = await x1.done;
    expect(res1.status).toBe(200);
    expect(res1.json()).toEqual({ by: 'A' });
    const closed = await a.closed;
    expect({ code: closed.code, reason: closed.reason }).toEqual({ code: 1000, reason: 'graceful shutdown complete' });
    expect(a.requests()).toHaveLength(1);
  });

  test('a draining worker keeps streaming its in-flight response to the end', async () => {
    const model = uniqueModel('drainstream');
    const w = await scope.worker({ models: [model] });
    const x = scope.post('/v1/chat/completions', chatBody(model, { stream: true }));
    const req = await w.nextRequest();
    w.chunk(req.request_id, 'data: {"n":1}\n\n');
    await scope.admin.drain(w.workerId, { timeout_secs: 20 });
    await w.next('graceful_shutdown');
    w.chunk(req.request_id, 'data: {"n":2}\n\ndata: [DONE]\n\n');
    w.complete(req.request_id, { status: 200 });
    const res = await x.done;
    expect(res.text).toBe('data: {"n":1}\n\ndata: {"n":2}\n\ndata: [DONE]\n\n');
    expect((await w.closed).reason).toBe('graceful shutdown complete');
  });

  test('past the drain deadline the in-flight request fails 503 drain_timeout and the worker is closed 1000 "graceful shutdown timed out"', async () => {
    const model = uniqueModel('deadline');
    const w = await scope.worker({ models: [model] });
    const x = scope.post('/v1/chat/completions', chatBody(model));
    await w.nextRequest();
    expect((await scope.admin.drain(w.workerId, { timeout_secs: 0.5, reason: 'deadline-test' })).status).toBe(202);
    const frame = await w.next('graceful_shutdown');
    // Wire format: drain_timeout_secs is an integer >= 1 when present.
    if (frame.drain_timeout_secs !== undefined) {
      expect(Number.isInteger(frame.drain_timeout_secs)).toBe(true);
      expect(frame.drain_timeout_secs).toBeGreaterThanOrEqual(1);
    }
    const err = expectOpenAiError(await x.done, 503, 'drain_timeout');
    expect(err.retriable).toBe(true);
    const closed = await w.closed;
    expect({ code: closed.code, reason: closed.reason }).toEqual({ code: 1000, reason: 'graceful shutdown timed out' });
  });

  test('draining an unknown worker id answers 404', async () => {
    const res = await scope.admin.drain('w-does-not-exist', { timeout_secs: 1 });
    expect(res.status).toBe(404);
  });

  test('the admin API requires the bearer token', async () => {
    const res = await scope.request('/admin/workers', { headers: { authorization: 'Bearer wrong-token' } }).done;
    expect(res.status).toBe(401);
    const none = await scope.request('/admin/providers').done;
    expect(none.status).toBe(401);
  });
});
