/**
 * Contract: "Non-streaming response pass-through" — status, headers and body of
 * response_complete reach the client faithfully, including backend 4xx and 5xx.
 */
import { useScope } from './support/scope';
import { chatBody, messagesBody, uniqueModel } from './support/util';

describe('non-streaming pass-through', () => {
  const scope = useScope();

  test.each([200, 201, 400, 404, 422, 429, 500, 503])('backend status %i with its headers and body reaches the client unchanged', async (status) => {
    const model = uniqueModel('pass');
    const w = await scope.worker({ models: [model] });
    const body = `{"id":"backend-${status}",  "note":"exact bytes — ünïcode ✓",\n"error":${status >= 400 ? '{"message":"backend said no","type":"backend_error"}' : 'null'}}`;
    const x = scope.post('/v1/chat/completions', chatBody(model));
    const req = await w.nextRequest();
    w.complete(req.request_id, {
      status,
      headers: { 'content-type': 'application/json; charset=utf-8', 'x-backend-request-id': `br-${status}`, 'openai-processing-ms': '42' },
      body,
    });
    const res = await x.done;
    expect(res.status).toBe(status);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.headers['x-backend-request-id']).toBe(`br-${status}`);
    expect(res.headers['openai-processing-ms']).toBe('42');
    expect(res.body.equals(Buffer.from(body, 'utf8'))).toBe(true);
  });

  test('a backend error body on /v1/messages is passed through, not rewritten into a gateway error', async () => {
    const model = uniqueModel('antpass');
    const w = await scope.worker({ models: [model] });
    const body = '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded (backend)"}}';
    const x = scope.post('/v1/messages', messagesBody(model));
    const req = await w.nextRequest();
    w.complete(req.request_id, { status: 529, headers: { 'content-type': 'application/json' }, body });
    const res = await x.done;
    expect(res.status).toBe(529);
    expect(res.text).toBe(body);
  });

  test('an empty body with a status is forwarded as such', async () => {
    const model = uniqueModel('empty');
    const w = await scope.worker({ models: [model] });
    const x = scope.post('/v1/chat/completions', chatBody(model));
    const req = await w.nextRequest();
    w.complete(req.request_id, { status: 204 });
    const res = await x.done;
    expect(res.status).toBe(204);
    expect(res.body.length).toBe(0);
  });

  test('hop-by-hop headers from the worker (transfer-encoding, connection) are not copied to the client', async () => {
    const model = uniqueModel('hop');
    const w = await scope.worker({ models: [model] });
    const body = '{"ok":true}';
    const x = scope.post('/v1/chat/completions', chatBody(model));
    const req = await w.nextRequest();
    w.complete(req.request_id, {
      status: 200,
      headers: {
        'content-type': 'application/json',
        'transfer-encoding': 'chunked',
        connection: 'keep-alive, x-hop-marker',
        'keep-alive': 'timeout=5',
        'x-kept': 'yes',
      },
      body,
    });
    const res = await x.done;
    expect(res.status).toBe(200);
    expect(res.text).toBe(body);
    expect(res.headers['x-kept']).toBe('yes');
    expect(res.headers['keep-alive']).toBeUndefined();
    expect(String(res.headers.connection ?? '')).not.toContain('x-hop-marker');
  });

  test('the worker slot is released after response_complete (a max_concurrent 1 worker serves requests back to back)', async () => {
    const model = uniqueModel('slot');
    const w = await scope.worker({ models: [model], max_concurrent: 1 });
    for (let i = 0; i < 3; i++) {
      const x = scope.post('/v1/chat/completions', chatBody(model, { i }));
      const req = await w.nextRequest();
      w.respondJson(req.request_id, { i });
      expect((await x.done).json()).toEqual({ i });
    }
  });

  test('a worker "error" frame for a request fails that request with a JSON gateway error and frees the slot', async () => {
    const model = uniqueModel('werr');
    const w = await scope.worker({ models: [model], max_concurrent: 1 });
    const x = scope.post('/v1/chat/completions', chatBody(model));
    const req = await w.nextRequest();
    w.error(req.request_id, 'backend_unreachable', 'connection refused');
    const res = await x.done;
    expect(res.status).toBeGreaterThanOrEqual(500);
    expect(res.json()).toEqual({ error: expect.objectContaining({ code: expect.any(String), message: expect.any(String) }) });
    expect(w.isOpen).toBe(true);
    const x2 = scope.post('/v1/chat/completions', chatBody(model));
    const req2 = await w.nextRequest();
    w.respondJson(req2.request_id, { second: true });
    expect((await x2.done).json()).toEqual({ second: true });
  });
});
