import { startGateway, TestGateway, TEST_ADMIN_TOKEN } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { admin } from '../support/http';

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
