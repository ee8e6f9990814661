/**
 * Contract: "Worker disconnect during active request" — requests that have not produced bytes
 * are requeued (finite: MAX_REQUEUES), a stream that already started ends with an SSE error
 * event instead of a second answer, and nothing hangs.
 */
import { parseSse, sseErrorCode, sseErrorPayload } from './support/sse';
import { expectAnthropicError, expectOpenAiError } from './support/expect-error';
import { useScope } from './support/scope';
import { target } from './support/target';
import { chatBody, messagesBody, sleep, uniqueModel } from './support/util';

describe('worker disconnect', () => {
  const scope = useScope();

  test.each([
    ['crash (no close frame)', 'terminate'],
    ['normal close', 'close'],
  ] as const)('disconnect before the first byte (%s): the request is requeued to another worker and succeeds', async (_l, how) => {
    const model = uniqueModel('requeue');
    const a = await scope.worker({ models: [model], max_concurrent: 1 }, {}, 'A');
    const body = chatBody(model, { marker: 'requeued' });
    const x = scope.post('/v1/chat/completions', body);
    const first = await a.nextRequest();
    const b = await scope.worker({ models: [model], max_concurrent: 1 }, {}, 'B');
    expect(b.requests()).toHaveLength(0);
    if (how === 'terminate') a.terminate();
    else a.close(1000, 'worker restarting');
    const again = await b.nextRequest();
    expect(again.model).toBe(model);
    expect(again.body).toBe(first.body);
    expect(again.body).toBe(body);
    b.respondJson(again.request_id, { served_by: 'B' });
    const res = await x.done;
    expect(res.status).toBe(200);
    expect(res.json()).toEqual({ served_by: 'B' });
  });

  test('a requeued request keeps its place: it is served before requests that arrived later', async () => {
    const model = uniqueModel('requeue-order');
    // A pool of its own: the queue depths waited on below are this test's requests only (other
    // suites queue at the default pool at the same time).
    const p = await scope.provider({ models: [model] }, 'requeue-order');
    const own = { provider: p.name, secret: p.secret };
    const a = await scope.worker({ models: [model], max_concurrent: 1 }, own, 'A');
    const x1 = scope.post('/v1/chat/completions', chatBody(model, { seq: 1 }));
    await a.nextRequest();
    const x2 = scope.post('/v1/chat/completions', chatBody(model, { seq: 2 }));
    await scope.admin.waitQueueDepth(p.name, 1);
    a.terminate();
    await scope.admin.waitQueueDepth(p.name, 2);
    const b = await scope.worker({ models: [model], max_concurrent: 1 }, own, 'B');
    const r1 = await b.nextRequest();
    expect(JSON.parse(r1.body).seq).toBe(1);
    b.respondJson(r1.request_id, { seq: 1 });
    const r2 = await b.nextRequest();
    expect(JSON.parse(r2.body).seq).toBe(2);
    b.respondJson(r2.request_id, { seq: 2 });
    expect((await x1.done).json()).toEqual({ seq: 1 });
    expect((await x2.done).json()).toEqual({ seq: 2 });
  });

  test('a requeued request keeps its original lifetime: it is not revived past its first deadline', async () => {
    // request timeout 3 s from arrival; the first worker drops it at ~2 s; a second worker
    // arrives at ~4 s, after the original deadline but before a reset one (~5 s) would pass.
    const model = uniqueModel('lifetime');
    const p = await scope.provider({ models: [model], request_timeout_secs: 3, queue_timeout_secs: 30 }, 'life');
    const a = await scope.worker({ models: [model] }, { provider: p.name, secret: p.secret }, 'A');
    const x = scope.post('/v1/chat/completions', chatBody(model));
    await a.nextRequest();
    await sleep(2_000);
    a.terminate();
    await sleep(2_000);
    const b = await scope.worker({ models: [model] }, { provider: p.name, secret: p.secret }, 'B');
    const res = await x.done;
    expect(res.status).toBe(504);
    expect(['request_timeout', 'queue_timeout']).toContain(res.json().error?.code);
    await sleep(300);
    expect(b.requests()).toHaveLength(0);
  });

  test('disconnect after the first byte: the stream ends with one `event: error` (code worker_disconnected) and nothing after; no second answer', async () => {
    const model = uniqueModel('midstream');
    const a = await scope.worker({ models: [model] }, {}, 'A');
    const x = scope.post('/v1/chat/completions', chatBody(model, { stream: true }));
    const req = await a.nextRequest();
    const partial = 'data: {"choices":[{"index":0,"delta":{"content":"partial"}}]}\n\n';
    a.chunk(req.request_id, partial);
    await x.waitForText((t) => t.includes('partial'));
    const b = await scope.worker({ models: [model] }, {}, 'B');
    a.terminate();
    const res = await x.done;
    expect(res.status).toBe(200);
    expect(res.text.startsWith(partial)).toBe(true);
    const events = parseSse(res.text.slice(partial.length));
    expect(events).toHaveLength(1);
    expect(events[0].event).toBe('error');
    expect(sseErrorCode(events[0].data)).toBe('worker_disconnected');
    expect(typeof sseErrorPayload(events[0].data).retriable).toBe('boolean');
    expect(res.text.endsWith('\n\n')).toBe(true);
    await sleep(500);
    expect(b.requests()).toHaveLength(0);
  });

  test('requeue is finite: after MAX_REQUEUES worker losses the client gets 503 requeue_exhausted', async () => {
    const model = uniqueModel('exhaust');
    const max = target().maxRequeues;
    let w = await scope.worker({ models: [model], max_concurrent: 1 }, {}, 'W0');
    const x = scope.post('/v1/chat/completions', chatBody(model, { marker: 'doomed' }));
    const seen: string[] = [];
    for (let i = 0; i <= max; i++) {
      if (i > 0) w = await scope.worker({ models: [model], max_concurrent: 1 }, {}, `W${i}`);
      const req = await w.nextRequest();
      seen.push(JSON.parse(req.body).marker);
      w.terminate();
      await w.closed;
    }
    const res = await x.done;
    expectOpenAiError(res, 503, 'requeue_exhausted');
    expect(seen).toEqual(Array(max + 1).fill('doomed'));
    // And it is not dispatched again.
    const late = await scope.worker({ models: [model], max_concurrent: 1 }, {}, 'late');
    await sleep(500);
    expect(late.requests()).toHaveLength(0);
  });

  test('requeue exhaustion on /v1/messages answers in the Anthropic dialect', async () => {
    const model = uniqueModel('exhaust-ant');
    let w = await scope.worker({ models: [model], max_concurrent: 1 }, {}, 'W0');
    const x = scope.post('/v1/messages', messagesBody(model));
    for (let i = 0; i <= target().maxRequeues; i++) {
      if (i > 0) w = await scope.worker({ models: [model], max_concurrent: 1 }, {}, `W${i}`);
      await w.nextRequest();
      w.terminate();
      await w.closed;
    }
    expectAnthropicError(await x.done, 503, 'requeue_exhausted');
  });
});
