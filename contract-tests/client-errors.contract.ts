/**
 * Contract: the client-facing error surface — malformed requests answer 400 invalid_request in
 * the caller's dialect (OpenAI on /v1/chat/completions etc., Anthropic on /v1/messages), and
 * X-Correlation-Id is echoed (also on SSE) or minted as a UUIDv4 on every response.
 */
import { expectAnthropicError, expectOpenAiError } from './support/expect-error';
import { useScope } from './support/scope';
import { chatBody, uniqueModel } from './support/util';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

const BAD_BODIES: Array<[string, string, string | undefined]> = [
  ['malformed JSON', '{"model": "x", "messages": [', undefined],
  ['a JSON array instead of an object', '[{"model":"x"}]', undefined],
  ['missing model', '{"messages":[{"role":"user","content":"hi"}]}', 'model'],
  ['non-string model', '{"model": 42, "messages": []}', 'model'],
  ['non-boolean stream', '{"model":"x","stream":"yes","messages":[]}', 'stream'],
];

describe('invalid requests', () => {
  const scope = useScope();

  test.each(BAD_BODIES)('%s → 400 invalid_request in the OpenAI dialect', async (_label, body, param) => {
    const res = await scope.post('/v1/chat/completions', body).done;
    const err = expectOpenAiError(res, 400, 'invalid_request');
    expect(err.type).toBe('invalid_request_error');
    expect(err.retriable).toBe(false);
    if (param) expect(err.param).toBe(param);
  });

  test.each(BAD_BODIES)('%s → 400 invalid_request in the Anthropic dialect on /v1/messages', async (_label, body) => {
    const res = await scope.post('/v1/messages', body).done;
    const err = expectAnthropicError(res, 400, 'invalid_request');
    expect(err.type).toBe('invalid_request_error');
    expect(err.retriable).toBe(false);
  });

  test('an empty body → 400 invalid_request', async () => {
    const res = await scope.request('/v1/chat/completions', { method: 'POST', body: '', headers: { 'content-type': 'application/json' } }).done;
    expectOpenAiError(res, 400, 'invalid_request');
  });

  test('an invalid request never reaches a worker', async () => {
    const model = uniqueModel('inv');
    const w = await scope.worker({ models: [model] });
    const res = await scope.post('/v1/chat/completions', JSON.stringify({ model, stream: 'true' })).done;
    expect(res.status).toBe(400);
    const ok = scope.post('/v1/chat/completions', chatBody(model, { marker: 'valid' }));
    const req = await w.nextRequest();
    expect(JSON.parse(req.body).marker).toBe('valid');
    w.respondJson(req.request_id, {});
    await ok.done;
    expect(w.requests()).toHaveLength(1);
  });
});

describe('X-Correlation-Id', () => {
  const scope = useScope();

  test('a client correlation id is echoed on a relayed response and forwarded to the worker', async () => {
    const model = uniqueModel('corr');
    const w = await scope.worker({ models: [model] });
    const x = scope.post('/v1/chat/completions', chatBody(model), { 'X-Correlation-Id': 'client-corr-123' });
    const req = await w.nextRequest();
    expect(req.headers['x-correlation-id']).toBe('client-corr-123');
    w.complete(req.request_id, { status: 200, headers: { 'content-type': 'application/json' }, body: '{}' });
    const res = await x.done;
    expect(res.headers['x-correlation-id']).toBe('client-corr-123');
  });

  test('a client correlation id is echoed on an SSE stream', async () => {
    const model = uniqueModel('corrsse');
    const w = await scope.worker({ models: [model] });
    const x = scope.post('/v1/chat/completions', chatBody(model, { stream: true }), { 'x-correlation-id': 'sse-corr-456' });
    const req = await w.nextRequest();
    w.chunk(req.request_id, 'data: {"a":1}\n\n');
    const head = await x.response;
    expect(String(head.headers['content-type'])).toMatch(/^text\/event-stream/);
    expect(head.headers['x-correlation-id']).toBe('sse-corr-456');
    w.complete(req.request_id, { status: 200 });
    await x.done;
  });

  test('a client correlation id is echoed on gateway error responses', async () => {
    const res = await scope.post('/v1/chat/completions', chatBody(uniqueModel('nope')), { 'x-correlation-id': 'err-corr-789' }).done;
    expect(res.status).toBe(404);
    expect(res.headers['x-correlation-id']).toBe('err-corr-789');
    const bad = await scope.post('/v1/messages', '{oops', { 'x-correlation-id': 'err-corr-790' }).done;
    expect(bad.status).toBe(400);
    expect(bad.headers['x-correlation-id']).toBe('err-corr-790');
  });

  test('without a client id the gateway mints a UUIDv4, returns it and forwards the same id to the worker', async () => {
    const model = uniqueModel('mint');
    const w = await scope.worker({ models: [model] });
    const x = scope.post('/v1/chat/completions', chatBody(model));
    const req = await w.nextRequest();
    w.respondJson(req.request_id, {});
    const res = await x.done;
    const minted = res.headers['x-correlation-id'];
    expect(minted).toMatch(UUID_V4);
    expect(req.headers['x-correlation-id']).toBe(minted);
  });

  test('minted ids differ per request and appear on errors, /v1/models and health responses too', async () => {
    const a = await scope.post('/v1/chat/completions', '{bad').done;
    const b = await scope.post('/v1/chat/completions', '{bad').done;
    const models = await scope.request('/v1/models').done;
    const health = await scope.request('/health/live').done;
    for (const r of [a, b, models, health]) expect(r.headers['x-correlation-id']).toMatch(UUID_V4);
    expect(a.headers['x-correlation-id']).not.toBe(b.headers['x-correlation-id']);
  });
});
