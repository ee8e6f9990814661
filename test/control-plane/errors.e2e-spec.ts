import { startGateway, TestGateway, TEST_ADMIN_TOKEN } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { call } from './support';

/** One error contract on every admin and pool route: 404 not_found, 409 conflict, 422 validation_failed, 400 for bad JSON. */
describe('admin and pool route errors', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway();
  });
  afterAll(() => gw.close());

  const raw = async (method: string, path: string, body: string) => {
    const res = await fetch(`${gw.url}${path}`, { method, headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'content-type': 'application/json' }, body });
    return { status: res.status, json: (await res.json()) as any };
  };

  it('creating a provider whose name exists is 409 conflict', async () => {
    const res = await call(gw, 'POST', '/admin/providers', { name: 'local' });
    expect(res.status).toBe(409);
    expect(res.json.error).toEqual({
      message: "Provider 'local' already exists",
      type: 'invalid_request_error',
      code: 'conflict',
      param: null,
      kind: 'INVALID_PARAMS',
      retriable: false,
    });
    expect((await call(gw, 'POST', '/admin/providers', { name: 'twice' })).status).toBe(201);
    expect((await call(gw, 'POST', '/admin/providers', { name: 'twice' })).status).toBe(409);
  });

  it('fields that fail validation are 422 validation_failed with one entry per field', async () => {
    const res = await call(gw, 'POST', '/admin/providers', { name: 'bad name!', max_queue_len: -1, enabled: 'yes', bogus: 1 });
    expect(res.status).toBe(422);
    expect(res.json.error).toMatchObject({ code: 'validation_failed', type: 'invalid_request_error', kind: 'INVALID_PARAMS', retriable: false });
    expect(res.json.error.message).toMatch(/^Request body failed validation: /);
    const fields = res.json.error.fields as Array<{ field: string; message: string }>;
    expect(new Set(fields.map((f) => f.field))).toEqual(new Set(['name', 'max_queue_len', 'enabled', 'bogus']));
    for (const f of fields) expect(typeof f.message).toBe('string');
    expect(fields.find((f) => f.field === 'bogus')?.message).toMatch(/should not exist/);
    expect(res.json.error.param).toBe(fields[0].field);
    expect((await call(gw, 'GET', '/admin/providers')).json.data.map((p: { name: string }) => p.name)).not.toContain('bad name!');
  });

  it('a malformed capability declaration is 422 naming the nested field', async () => {
    const res = await call(gw, 'PATCH', '/admin/providers/local', { capabilities: { m: { vision: 'yes' } } });
    expect(res.status).toBe(422);
    expect(res.json.error.code).toBe('validation_failed');
    expect(res.json.error.fields).toEqual([{ field: 'capabilities.m.vision', message: 'capabilities.m.vision must be true or false' }]);
  });

  it('pool drain and worker drain bodies are validated the same way', async () => {
    for (const body of [{ deadline_ms: 'soon' }, { deadline_ms: 0 }, { deadline_ms: 1.5 }, { deadline_ms: 1000, extra: true }]) {
      const res = await call(gw, 'POST', '/v1/pools/local/drain', body);
      expect(res.status).toBe(422);
      expect(res.json.error.code).toBe('validation_failed');
      expect(res.json.error.fields.length).toBeGreaterThan(0);
    }
    expect((await call(gw, 'GET', '/v1/pools/local/health')).json.draining).toBe(false);
    const { worker, ack } = await ScriptedWorker.register(gw.workerUrl, { models: ['v'] });
    const res = await call(gw, 'POST', `/admin/workers/${ack.worker_id}/drain`, { timeout_secs: -1, reason: 7 });
    expect(res.status).toBe(422);
    expect(res.json.error.fields.map((f: { field: string }) => f.field).sort()).toEqual(['reason', 'timeout_secs']);
    expect(worker.closeState).toBeUndefined();
    worker.close();
  });

  it('malformed JSON, or JSON that is not an object, stays a 400 invalid_request', async () => {
    for (const [method, path] of [
      ['POST', '/admin/providers'],
      ['PATCH', '/admin/providers/local'],
      ['POST', '/v1/pools/local/drain'],
    ]) {
      const bad = await raw(method, path, '{"name": ');
      expect(bad.status).toBe(400);
      expect(bad.json.error).toMatchObject({ code: 'invalid_request', message: 'Request body is not valid JSON', retriable: false });
      const list = await raw(method, path, '[1, 2]');
      expect(list.status).toBe(400);
      expect(list.json.error).toMatchObject({ code: 'invalid_request', message: 'Request body must be a JSON object' });
    }
  });

  it('unknown providers are 404 not_found (no more provider_not_found on the admin API)', async () => {
    for (const [method, path, body] of [
      ['PATCH', '/admin/providers/ghost', { enabled: false }],
      ['PATCH', '/admin/providers/ghost', { enabled: 'not even valid' }],
      ['DELETE', '/admin/providers/ghost', undefined],
    ] as const) {
      const res = await call(gw, method, path, body);
      expect(res.status).toBe(404);
      expect(res.json.error).toMatchObject({ code: 'not_found', message: "Provider 'ghost' not found", retriable: false });
    }
  });
});
