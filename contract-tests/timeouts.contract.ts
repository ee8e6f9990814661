/**
 * Contract: "Timeout behavior" — the provider's request timeout bounds the request lifetime:
 * in flight it sends cancel{timeout} to the worker and answers 504 request_timeout (an
 * established stream gets an SSE error instead); queue timeouts are covered in queueing.
 */
import { parseSse, sseErrorCode, sseErrorPayload } from './support/sse';
import { expectAnthropicError, expectOpenAiError } from './support/expect-error';
import { useScope } from './support/scope';
import { chatBody, messagesBody, uniqueModel } from './support/util';

describe('request timeout', () => {
  const scope = useScope();

  async function timedProvider(label: string) {
    const model = uniqueModel(label);
    const p = await scope.provider({ models: [model], request_timeout_secs: 1, queue_timeout_secs: 1 }, label);
    return { model, p };
  }

  test('an in-flight request past the request timeout: worker gets cancel{timeout}, client gets 504 request_timeout', async () => {
    const { model, p } = await timedProvider('rto');
    const w = await scope.worker({ models: [model] }, { provider: p.name, secret: p.secret });
    const x = scope.post('/v1/chat/completions', chatBody(model));
    const req = await w.nextRequest();
    const cancel = await w.next('cancel');
    expect(cancel).toEqual(expect.objectContaining({ request_id: req.request_id, reason: 'timeout' }));
    const err = expectOpenAiError(await x.done, 504, 'request_timeout');
    expect(err.retriable).toBe(true);
    expect(w.isOpen).toBe(true);
  });

  test('request timeout on /v1/messages answers 504 in the Anthropic dialect', async () => {
    const { model, p } = await timedProvider('rto-ant');
    const w = await scope.worker({ models: [model] }, { provider: p.name, secret: p.secret });
    const x = scope.post('/v1/messages', messagesBody(model));
    const req = await w.nextRequest();
    await w.next('cancel', (f) => f.request_id === req.request_id && f.reason === 'timeout');
    const err = expectAnthropicError(await x.done, 504, 'request_timeout');
    expect(err.type).toBe('timeout_error');
  });

  test('a stream that already started and then times out stays 200 and ends with `event: error` (request_timeout)', async () => {
    const { model, p } = await timedProvider('rto-stream');
    const w = await scope.worker({ models: [model] }, { provider: p.name, secret: p.secret });
    const x = scope.post('/v1/chat/completions', chatBody(model, { stream: true }));
    const req = await w.nextRequest();
    const first = 'data: {"n":1}\n\n';
    w.chunk(req.request_id, first);
    await w.next('cancel', (f) => f.request_id === req.request_id && f.reason === 'timeout');
    const res = await x.done;
    expect(res.status).toBe(200);
    expect(res.text.startsWith(first)).toBe(true);
    const events = parseSse(res.text.slice(first.length));
    expect(events).toHaveLength(1);
    expect(events[0].event).toBe('error');
    expect(sseErrorCode(events[0].data)).toBe('request_timeout');
    expect(typeof sseErrorPayload(events[0].data).retriable).toBe('boolean');
  });

  test('the worker slot of a timed-out request is released (the next request is served)', async () => {
    const { model, p } = await timedProvider('rto-slot');
    const w = await scope.worker({ models: [model], max_concurrent: 1 }, { provider: p.name, secret: p.secret });
    const x = scope.post('/v1/chat/completions', chatBody(model));
    const req = await w.nextRequest();
    await w.next('cancel', (f) => f.request_id === req.request_id);
    expect((await x.done).status).toBe(504);
    const next = scope.post('/v1/chat/completions', chatBody(model, { marker: 'next' }));
    const req2 = await w.nextRequest();
    expect(JSON.parse(req2.body).marker).toBe('next');
    w.respondJson(req2.request_id, { ok: true });
    expect((await next.done).status).toBe(200);
  });
});
