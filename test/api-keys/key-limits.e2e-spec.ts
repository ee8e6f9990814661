import { startGateway, TestGateway } from '../support/gateway';
import { chat, post } from '../support/http';
import { ScriptedWorker } from '../support/scripted-worker';
import { adminCall, answerNext, chatCompletion, createKey } from './support';

/** Keys and stored tenants feed admission limits (TenantLimits) through ClientIdentity.keyId/keyLimits. */
describe('client API keys: limits at admission', () => {
  let gw: TestGateway;
  let worker: ScriptedWorker;
  beforeAll(async () => {
    gw = await startGateway({ REQUIRE_API_KEYS: 'true' });
    ({ worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['m1'], max_concurrent: 4 }));
  });
  afterAll(async () => {
    worker.close();
    await gw.close();
  });

  async function served(key: string): Promise<number> {
    const pending = post(gw.url, '/v1/chat/completions', chat('m1'), { authorization: `Bearer ${key}` });
    await answerNext(worker, chatCompletion);
    return (await pending).status;
  }

  it("counts a key's rpm per key, not per tenant", async () => {
    const limited = await createKey(gw, { name: 'one-per-minute', tenant: 'team-l', rpm: 1 });
    const other = await createKey(gw, { name: 'unlimited', tenant: 'team-l' });
    expect(await served(limited.key)).toBe(200);
    const refused = await post(gw.url, '/v1/chat/completions', chat('m1'), { authorization: `Bearer ${limited.key}` });
    expect(refused.status).toBe(429);
    expect(refused.json.error).toMatchObject({ code: 'rate_limit_exceeded', limit: 1, remaining: 0 });
    expect(await served(other.key)).toBe(200);
  });

  it('applies a tenant limit stored with PUT /admin/tenants at once to its keys', async () => {
    const a = await createKey(gw, { name: 'a', tenant: 'team-p' });
    const b = await createKey(gw, { name: 'b', tenant: 'team-p' });
    expect((await adminCall(gw, 'PUT', '/admin/tenants/team-p', { rpm: 1 })).status).toBe(200);
    expect(await served(a.key)).toBe(200);
    const refused = await post(gw.url, '/v1/chat/completions', chat('m1'), { 'x-api-key': b.key });
    expect(refused.status).toBe(429);
    expect(refused.json.error.code).toBe('rate_limit_exceeded');
  });
});
