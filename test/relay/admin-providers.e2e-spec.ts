import { startGateway, TestGateway, TEST_ADMIN_TOKEN } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { admin, chat, post } from '../support/http';

describe('admin API: deleting providers', () => {
  let gw: TestGateway;
  beforeEach(async () => {
    gw = await startGateway(); // the built-in provider "local" comes from WORKER_SECRET
  });
  afterEach(() => gw.close());

  const call = (method: string, path: string, body?: unknown) => admin(gw.url, method, path, TEST_ADMIN_TOKEN, body);
  const providerNames = async () => (await call('GET', '/admin/providers')).json.data.map((p: { name: string }) => p.name);

  it('refuses 409 conflict to delete a provider that comes from configuration, and keeps its workers', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['kept'] });
    const res = await call('DELETE', '/admin/providers/local');
    expect(res.status).toBe(409);
    expect(res.json.error).toMatchObject({ code: 'conflict', retriable: false });
    expect(res.json.error.message).toMatch(/comes from configuration/);
    expect(res.json.error.message).toMatch(/next boot/);
    expect(res.json.error.message).toMatch(/force=true/);
    expect(await providerNames()).toContain('local');
    expect((await call('GET', '/admin/workers')).json.data).toHaveLength(1);
    expect(worker.closeState).toBeUndefined();
    worker.close();
  });

  it('deletes it with ?force=true and says it returns at the next boot', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['dropped'] });
    const res = await call('DELETE', '/admin/providers/local?force=true');
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ deleted: 'local', source: 'config' });
    expect(res.json.note).toMatch(/comes from configuration.*next boot/);
    expect(await worker.closed).toEqual({ code: 1000, reason: 'graceful shutdown complete' });
    expect(await providerNames()).not.toContain('local');
  });

  it('deletes an admin-created provider without force, as before', async () => {
    expect((await call('POST', '/admin/providers', { name: 'temp', secret: 'temp-secret-1' })).status).toBe(201);
    const res = await call('DELETE', '/admin/providers/temp');
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ deleted: 'temp' });
    expect(await providerNames()).not.toContain('temp');
  });

  it('answers 400 for a force value other than true or false', async () => {
    const res = await call('DELETE', '/admin/providers/local?force=yes');
    expect(res.status).toBe(400);
    expect(res.json.error).toMatchObject({ code: 'invalid_request', param: 'force' });
    expect(await providerNames()).toContain('local');
  });
});

describe('admin API: a pool’s own first-byte timeout (first_byte_timeout_secs)', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({ ROUTING_FIRST_BYTE_TIMEOUT_SECS: '60' });
  });
  afterAll(() => gw.close());

  const call = (method: string, path: string, body?: unknown) => admin(gw.url, method, path, TEST_ADMIN_TOKEN, body);

  it('is set at creation, shown, changed by PATCH, cleared with null and validated', async () => {
    const created = await call('POST', '/admin/providers', { name: 'fb-pool', secret: 'fb-secret-1', first_byte_timeout_secs: 300 });
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({ name: 'fb-pool', first_byte_timeout_secs: 300 });
    expect((await call('PATCH', '/admin/providers/fb-pool', { first_byte_timeout_secs: 0.5 })).json).toMatchObject({ first_byte_timeout_secs: 0.5 });
    const listed = (await call('GET', '/admin/providers')).json.data;
    expect(listed.find((p: { name: string }) => p.name === 'fb-pool')).toMatchObject({ first_byte_timeout_secs: 0.5 });
    // Unset: the gateway's routing.first_byte_timeout_secs applies (null says so).
    expect(listed.find((p: { name: string }) => p.name === 'local')).toMatchObject({ first_byte_timeout_secs: null });
    for (const bad of [0, -1, 'soon', 3_000_000]) {
      const res = await call('PATCH', '/admin/providers/fb-pool', { first_byte_timeout_secs: bad });
      expect(res.status).toBe(422);
      expect(JSON.stringify(res.json.error)).toContain('first_byte_timeout_secs');
    }
    expect((await call('PATCH', '/admin/providers/fb-pool', { first_byte_timeout_secs: null })).json).toMatchObject({ first_byte_timeout_secs: null });
    expect((await call('DELETE', '/admin/providers/fb-pool')).status).toBe(200);
  });

  it("the first-byte watchdog uses the pool's value: a silent worker of the pool is cancelled after it, not after routing.first_byte_timeout_secs", async () => {
    expect((await call('POST', '/admin/providers', { name: 'fb-fast', secret: 'fb-fast-secret', first_byte_timeout_secs: 0.4 })).status).toBe(201);
    const silent = await ScriptedWorker.register(gw.workerUrl, { models: ['fb-m'], max_concurrent: 1 }, { provider: 'fb-fast', secret: 'fb-fast-secret' });
    const started = Date.now();
    const pending = post(gw.url, '/v1/chat/completions', chat('fb-m'));
    const first = await silent.worker.next('request');
    const other = await ScriptedWorker.register(gw.workerUrl, { models: ['fb-m'], max_concurrent: 1 }, { provider: 'fb-fast', secret: 'fb-fast-secret' });
    const cancel = await silent.worker.next('cancel');
    expect(cancel).toMatchObject({ request_id: first.request_id, reason: 'timeout' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(350);
    expect(Date.now() - started).toBeLessThan(30_000);
    // The silent worker is avoided now: the request moves to the other worker of the pool.
    const again = await other.worker.next('request');
    expect(again.request_id).toBe(first.request_id);
    other.worker.complete(again.request_id, { id: 'from-other', object: 'chat.completion', choices: [] });
    expect((await pending).status).toBe(200);
    other.worker.close();
    silent.worker.close();
  });
});
