import { startGateway, TestGateway, TEST_ADMIN_TOKEN } from '../support/gateway';
import { get } from '../support/http';
import { counterByReason, fromAddress } from './support-auth';

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** Issue 16 M6: the admin token's own failed-attempt limiter, metric and minimum-length warning. */
describe('hardening/auth: admin token failures', () => {
  describe('ADMIN_AUTH_FAILURE_LIMIT (default 10 per address per minute)', () => {
    let gw: TestGateway;
    beforeAll(async () => {
      gw = await startGateway();
    });
    afterAll(() => gw.close());

    it('throttles the guessing address, refuses even the right token from it while throttled, and never the right token from another address', async () => {
      const statuses: number[] = [];
      for (let i = 0; i < 12; i++) statuses.push((await fromAddress(gw, '127.0.0.2', 'GET', '/admin/keys', bearer(`guess-${i}`))).status);
      expect(statuses).toEqual([...Array(10).fill(401), 429, 429]);

      const throttled = await fromAddress(gw, '127.0.0.2', 'GET', '/admin/keys', bearer(TEST_ADMIN_TOKEN));
      expect([throttled.status, throttled.json.error.code]).toEqual([429, 'auth_rate_limited']);
      expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThan(0);

      expect((await fromAddress(gw, '127.0.0.3', 'GET', '/admin/keys', bearer(TEST_ADMIN_TOKEN))).status).toBe(200);
      expect((await get(gw.url, '/admin/keys', bearer(TEST_ADMIN_TOKEN))).status).toBe(200);
      expect(await counterByReason(gw, 'switchboard_admin_auth_failures_total')).toEqual({ invalid: 10, rate_limited: 3 });
    });

    it('a request without a token is refused (and counted) but is not a guess: it never throttles its address', async () => {
      for (let i = 0; i < 15; i++) expect((await fromAddress(gw, '127.0.0.4', 'GET', '/admin/keys')).status).toBe(401);
      expect((await fromAddress(gw, '127.0.0.4', 'GET', '/admin/keys', bearer(TEST_ADMIN_TOKEN))).status).toBe(200);
      expect((await counterByReason(gw, 'switchboard_admin_auth_failures_total')).missing).toBe(15);
    });
  });

  it('a trusted proxy: Forwarded wins over X-Forwarded-For when both name the client', async () => {
    const gw = await startGateway({ TRUSTED_PROXIES: '127.0.0.1', ADMIN_AUTH_FAILURE_LIMIT: '2' });
    try {
      for (let i = 0; i < 2; i++) {
        const res = await get(gw.url, '/admin/keys', { ...bearer('wrong'), forwarded: 'for=198.51.100.7;proto=https', 'x-forwarded-for': '198.51.100.8' });
        expect(res.status).toBe(401);
      }
      // The failures were charged to the Forwarded client, not the X-Forwarded-For one.
      expect((await get(gw.url, '/admin/keys', { ...bearer(TEST_ADMIN_TOKEN), forwarded: 'for=198.51.100.7' })).status).toBe(429);
      expect((await get(gw.url, '/admin/keys', { ...bearer(TEST_ADMIN_TOKEN), forwarded: 'for=198.51.100.8' })).status).toBe(200);
      expect((await get(gw.url, '/admin/keys', { ...bearer(TEST_ADMIN_TOKEN), 'x-forwarded-for': '198.51.100.8' })).status).toBe(200);
    } finally {
      await gw.close();
    }
  });

  it('warns at startup when ADMIN_TOKEN is shorter than 24 characters, and only then', async () => {
    const warnings = async (token: string) => {
      const lines: string[] = [];
      const gw = await startGateway({ ADMIN_TOKEN: token, LOG_LEVEL: 'warn' }, { logDestination: { write: (chunk: string) => void lines.push(chunk) } });
      await gw.close();
      return lines.filter((l) => l.includes('ADMIN_TOKEN is'));
    };
    const short = await warnings('short-admin-token');
    expect(short).toHaveLength(1);
    expect(short[0]).toContain('ADMIN_TOKEN is 17 characters long');
    expect(short[0]).not.toContain('short-admin-token');
    expect(await warnings('a-long-enough-admin-token-0123456789')).toEqual([]);
  });
});
