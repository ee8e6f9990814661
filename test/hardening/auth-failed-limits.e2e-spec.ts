import { answerNext, chatCompletion, createKey } from '../api-keys/support';
import { startGateway, TestGateway } from '../support/gateway';
import { chat, post } from '../support/http';
import { ScriptedWorker } from '../support/scripted-worker';
import { counterByReason, fromAddress } from './support-auth';

const bogus = (i: number) => `sb-bogus-${String(i).padStart(40, '0')}`;

/** Issue 16 M8: failed-auth limits that do not lock out the innocent (client API keys). */
describe('hardening/auth: failed API-key limits never lock out a valid key', () => {
  let gw: TestGateway;
  let worker: ScriptedWorker;
  let key: string;
  beforeAll(async () => {
    // No TRUSTED_PROXIES: every client of the test is 127.0.0.1, as every client behind an untrusted proxy is the proxy.
    gw = await startGateway({ REQUIRE_API_KEYS: 'true', CLIENT_AUTH_FAILURE_LIMIT: '5', CLIENT_AUTH_BLOCK_SECS: '60' });
    ({ worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['m1'], max_concurrent: 4 }));
    ({ key } = await createKey(gw, { name: 'holder', tenant: 'team-a' }));
  });
  afterAll(async () => {
    worker.close();
    await gw.close();
  });

  it('behind a proxy without TRUSTED_PROXIES, one client guessing keys does not lock out the key holders', async () => {
    const codes: string[] = [];
    for (let i = 0; i < 8; i++) {
      const res = await post(gw.url, '/v1/chat/completions', chat('m1'), { authorization: `Bearer ${bogus(i)}`, 'x-forwarded-for': '203.0.113.66' });
      codes.push(`${res.status} ${res.json.error.code}`);
    }
    expect(codes).toEqual([...Array(5).fill('401 invalid_api_key'), ...Array(3).fill('429 auth_rate_limited')]);

    // The address is throttled, yet a valid key from it is accepted (looked up before the limiter is asked).
    const presentations: Array<Record<string, string>> = [{ authorization: `Bearer ${key}` }, { 'x-api-key': key }];
    for (const headers of presentations) {
      const pending = post(gw.url, '/v1/chat/completions', chat('m1'), { ...headers, 'x-forwarded-for': '198.51.100.1' });
      await answerNext(worker, chatCompletion);
      expect((await pending).status).toBe(200);
    }
    // Unknown material from the throttled address is still refused without being looked at further.
    const guess = await post(gw.url, '/v1/chat/completions', chat('m1'), { authorization: `Bearer ${bogus(99)}` });
    expect([guess.status, guess.json.error.code]).toEqual([429, 'auth_rate_limited']);
    expect(await counterByReason(gw, 'switchboard_client_auth_failures_total')).toMatchObject({ invalid: 5, rate_limited: 4 });
  });

  it('concurrent attempts from one address count toward the limit: a burst gets no more than the limit of tries', async () => {
    const burst = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        fromAddress(gw, '127.0.0.9', 'POST', '/v1/chat/completions', { authorization: `Bearer ${bogus(1000 + i)}` }, JSON.stringify(chat('m1'))),
      ),
    );
    const tried = burst.filter((r) => r.status === 401).length;
    expect(tried).toBe(5);
    expect(burst.filter((r) => r.status === 429)).toHaveLength(25);
  });
});
