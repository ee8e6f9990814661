/**
 * Contract: "Request dispatch over WebSocket" — request frames carry request_id, model, the raw
 * JSON body string, the compatibility headers (lowercased), endpoint_path and is_streaming.
 */
import { useScope } from './support/scope';
import { chatBody, uniqueModel } from './support/util';

describe('request dispatch', () => {
  const scope = useScope();

  test('the request frame carries request_id, model, endpoint_path, is_streaming and the raw body byte-for-byte', async () => {
    const model = uniqueModel('frame');
    const w = await scope.worker({ models: [model] });
    // Unusual spacing, key order, escapes and non-ASCII text: a re-serialised body would differ.
    const raw = `{  "zeta": 1, "model" : "${model}",\n\t"messages":[{"role":"user","content":"h\\u00e9llo — ünïcode ✓ \\"quoted\\""}],  "temperature": 0.50, "alpha": [1,2 ,3] }`;
    const x = scope.post('/v1/chat/completions', raw);
    const req = await w.nextRequest();
    expect(req).toEqual(
      expect.objectContaining({
        type: 'request',
        request_id: expect.any(String),
        model,
        endpoint_path: '/v1/chat/completions',
        is_streaming: false,
        body: raw,
      }),
    );
    expect(req.request_id.length).toBeGreaterThan(0);
    expect(Buffer.from(req.body, 'utf8').equals(Buffer.from(raw, 'utf8'))).toBe(true);
    w.respondJson(req.request_id, { ok: true });
    expect((await x.done).status).toBe(200);
  });

  test('every request gets its own request_id', async () => {
    const model = uniqueModel('ids');
    const w = await scope.worker({ models: [model], max_concurrent: 8 });
    const xs = [0, 1, 2, 3].map((i) => scope.post('/v1/chat/completions', chatBody(model, { i })));
    const ids = new Set<string>();
    for (let i = 0; i < xs.length; i++) {
      const req = await w.nextRequest();
      ids.add(req.request_id);
      w.respondJson(req.request_id, {});
    }
    expect(ids.size).toBe(4);
    await Promise.all(xs.map((x) => x.done));
  });

  test('stream:true sets is_streaming on the frame', async () => {
    const model = uniqueModel('isstream');
    const w = await scope.worker({ models: [model] });
    const x = scope.post('/v1/chat/completions', chatBody(model, { stream: true }));
    const req = await w.nextRequest();
    expect(req.is_streaming).toBe(true);
    w.chunk(req.request_id, 'data: [DONE]\n\n');
    w.complete(req.request_id, { status: 200 });
    expect((await x.done).status).toBe(200);
  });

  test.each(['/v1/chat/completions', '/v1/completions', '/v1/embeddings', '/v1/responses', '/v1/messages'])(
    'endpoint_path names the client endpoint: %s',
    async (path) => {
      const model = uniqueModel('path');
      const w = await scope.worker({ models: [model] });
      const x = scope.post(path, JSON.stringify({ model, input: 'x', max_tokens: 4, messages: [{ role: 'user', content: 'x' }] }));
      const req = await w.nextRequest();
      expect(req.endpoint_path).toBe(path);
      expect(req.is_streaming).toBe(false);
      w.respondJson(req.request_id, { ok: true });
      expect((await x.done).status).toBe(200);
    },
  );

  test('compatibility headers are forwarded lowercased; transport headers are not', async () => {
    const model = uniqueModel('headers');
    const w = await scope.worker({ models: [model] });
    const x = scope.post('/v1/chat/completions', chatBody(model), {
      Authorization: 'Bearer sk-client-key',
      'Content-Type': 'application/json',
      'OpenAI-Organization': 'org-contract',
      'X-Api-Key': 'sk-ant-client',
      'Anthropic-Version': '2023-06-01',
      'Anthropic-Beta': 'tools-2024-04-04',
      'X-Correlation-Id': 'corr-dispatch-1',
      Connection: 'keep-alive',
    });
    const req = await w.nextRequest();
    expect(req.headers).toEqual(
      expect.objectContaining({
        authorization: 'Bearer sk-client-key',
        'content-type': 'application/json',
        'openai-organization': 'org-contract',
        'x-api-key': 'sk-ant-client',
        'anthropic-version': '2023-06-01',
        'anthropic-beta': 'tools-2024-04-04',
        'x-correlation-id': 'corr-dispatch-1',
      }),
    );
    for (const name of Object.keys(req.headers)) expect(name).toBe(name.toLowerCase());
    for (const name of ['host', 'content-length', 'connection', 'transfer-encoding']) expect(req.headers).not.toHaveProperty(name);
    w.respondJson(req.request_id, { ok: true });
    expect((await x.done).status).toBe(200);
  });

  test('the Anthropic endpoint forwards x-api-key and anthropic-version to the worker', async () => {
    const model = uniqueModel('antheaders');
    const w = await scope.worker({ models: [model] });
    const body = JSON.stringify({ model, max_tokens: 8, messages: [{ role: 'user', content: 'hi' }], stream: true });
    const x = scope.post('/v1/messages', body, { 'x-api-key': 'sk-ant-xyz', 'anthropic-version': '2023-06-01' });
    const req = await w.nextRequest();
    expect(req.endpoint_path).toBe('/v1/messages');
    expect(req.is_streaming).toBe(true);
    expect(req.body).toBe(body);
    expect(req.headers).toEqual(expect.objectContaining({ 'x-api-key': 'sk-ant-xyz', 'anthropic-version': '2023-06-01', 'content-type': 'application/json' }));
    w.chunk(req.request_id, 'event: message_stop\ndata: {"type":"message_stop"}\n\n');
    w.complete(req.request_id);
    expect((await x.done).status).toBe(200);
  });
});
