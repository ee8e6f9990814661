import { configFile, adminCall, answerNext, chatCompletion, createKey } from '../api-keys/support';
import { startGateway, TestGateway } from '../support/gateway';
import { chat, eventually, get, post } from '../support/http';
import { ScriptedWorker } from '../support/scripted-worker';
import { chatTask, submit } from '../tasks/support';

/**
 * Issue 16 H3: with REQUIRE_API_KEYS=false (the default), a tenant that has an active key is
 * reached only with one of its keys; anonymous callers naming it in x-tenant-id are refused 401.
 */
describe('hardening/auth: a tenant with keys is reached only with its keys', () => {
  let gw: TestGateway;
  let worker: ScriptedWorker;
  let key: string;
  let keyId: string;
  const asTeamA = { 'x-tenant-id': 'team-a' };

  beforeAll(async () => {
    const file = configFile(['tenants:', '  team-a: {rpm: 4}', '  team-b: {rpm: 3}'].join('\n'));
    gw = await startGateway({ CONFIG_FILE: file });
    ({ worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['m1'], max_concurrent: 8 }));
    ({ key, id: keyId } = await createKey(gw, { name: 'team-a-app', tenant: 'team-a' }));
  });
  afterAll(async () => {
    worker.close();
    await gw.close();
  });

  it("refuses an anonymous inference request naming the tenant, in the caller's dialect, and the worker never sees it", async () => {
    const openai = await post(gw.url, '/v1/chat/completions', chat('m1'), asTeamA);
    expect(openai.status).toBe(401);
    expect(openai.json.error).toMatchObject({ type: 'authentication_error', code: 'invalid_api_key', param: 'x-tenant-id' });
    const anthropic = await post(gw.url, '/v1/messages', { model: 'm1', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }, asTeamA);
    expect(anthropic.status).toBe(401);
    expect(anthropic.json).toMatchObject({ type: 'error', error: { type: 'authentication_error', code: 'invalid_api_key' } });
    expect(worker.count('request')).toBe(0);
  });

  it("never serves the tenant's artifacts, tasks or task streams to an anonymous caller", async () => {
    const artifact = await post(gw.url, '/v1/artifacts', { kind: 'plan', content: { secret: 'team-a-plan' } }, { authorization: `Bearer ${key}` });
    expect(artifact.status).toBe(201);
    const task = await submit(gw, chatTask('m1'), { authorization: `Bearer ${key}` });
    expect(task.status).toBe(202);
    await worker.next('request'); // the task is running on the worker: it exists and has a stream

    for (const path of [
      '/v1/artifacts',
      `/v1/artifacts/${artifact.json.id}`,
      `/v1/artifacts/${artifact.json.id}?include=transcript`,
      `/v1/artifacts/${artifact.json.id}/transcript`,
      `/v1/tasks/${task.json.task_id}`,
      `/v1/tasks/${task.json.task_id}/stream`,
    ]) {
      const res = await get(gw.url, path, asTeamA);
      expect([path, res.status, res.json?.error?.code]).toEqual([path, 401, 'invalid_api_key']);
      expect(res.text).not.toContain('team-a-plan');
    }
    const cancel = await post(gw.url, `/v1/tasks/${task.json.task_id}/cancel`, '', asTeamA);
    expect(cancel.status).toBe(401);
    // With the key, the same data is there.
    expect((await get(gw.url, `/v1/artifacts/${artifact.json.id}`, { authorization: `Bearer ${key}` })).json.content).toEqual({ secret: 'team-a-plan' });
    expect((await get(gw.url, `/v1/tasks/${task.json.task_id}`, { 'x-api-key': key })).status).toBe(200);
  });

  it("an anonymous caller cannot spend the tenant's rate limit", async () => {
    for (let i = 0; i < 6; i++) expect((await post(gw.url, '/v1/chat/completions', chat('m1'), asTeamA)).status).toBe(401);
    // The key still has the rest of the tenant's minute (rpm 4; the artifact and the task above took two).
    for (let i = 0; i < 2; i++) {
      const pending = post(gw.url, '/v1/chat/completions', chat('m1'), { authorization: `Bearer ${key}` });
      await answerNext(worker, chatCompletion);
      expect((await pending).status).toBe(200);
    }
  });

  it('tenants without keys (and the default tenant) stay open to anonymous callers while keys are not required', async () => {
    const pending = post(gw.url, '/v1/chat/completions', chat('m1'), { 'x-tenant-id': 'team-b' });
    const frame = await answerNext(worker, chatCompletion);
    expect((await pending).status).toBe(200);
    expect(frame.headers['x-tenant-id']).toBe('team-b');
    expect((await get(gw.url, '/v1/artifacts')).status).toBe(200);
  });

  it('follows the keys: revoking the last active key reopens the tenant, restoring it closes it again', async () => {
    expect((await adminCall(gw, 'PATCH', `/admin/keys/${keyId}`, { enabled: false })).status).toBe(200);
    expect((await get(gw.url, '/v1/artifacts', asTeamA)).status).toBe(200);
    expect((await adminCall(gw, 'PATCH', `/admin/keys/${keyId}`, { enabled: true })).status).toBe(200);
    expect((await get(gw.url, '/v1/artifacts', asTeamA)).status).toBe(401);
  });

  it('a key that expires stops guarding its tenant when it expires, without any admin call', async () => {
    const expiresAt = new Date(Date.now() + 2500).toISOString();
    await createKey(gw, { name: 'short-lived', tenant: 'team-c', expires_at: expiresAt });
    expect((await get(gw.url, '/v1/artifacts', { 'x-tenant-id': 'team-c' })).status).toBe(401);
    await eventually(async () => (await get(gw.url, '/v1/artifacts', { 'x-tenant-id': 'team-c' })).status === 200, 15_000);
  });
});
