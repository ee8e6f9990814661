import { configFile } from '../api-keys/support';
import { startGateway, TestGateway, TEST_ADMIN_TOKEN } from '../support/gateway';
import { get, post } from '../support/http';
import { counterByReason, fromAddress } from './support-auth';

/** Issue 16 M7: what an unauthenticated or anonymous client can make the gateway store. */
describe('hardening/auth: unauthenticated refusals and artifact writes have bounded cost', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    const file = configFile(['tenants:', '  team-r: {rpm: 2}', 'artifacts:', '  max_bytes_per_tenant: 3000'].join('\n'));
    // Lifecycle is off (no op-token key): the admin check still runs first on the governed routes.
    gw = await startGateway({ CONFIG_FILE: file, ADMIN_AUTH_FAILURE_LIMIT: '1000' });
  });
  afterAll(() => gw.close());

  it('refusals at the admin token check are aggregated in the audit log: one row per address and minute, not one per request', async () => {
    const load = (address: string, i: number) =>
      fromAddress(gw, address, 'POST', '/v1/models/load', { authorization: `Bearer wrong-${i}` }, JSON.stringify({ modelId: 'm', workerId: 'w' }));
    for (let i = 0; i < 40; i++) expect((await load('127.0.0.5', i)).status).toBe(401);
    for (let i = 0; i < 3; i++) expect((await load('127.0.0.6', i)).status).toBe(401);

    const audit = await get(gw.url, '/admin/audit?operation=model-load&limit=100', { authorization: `Bearer ${TEST_ADMIN_TOKEN}` });
    expect(audit.status).toBe(200);
    const rows: Array<Record<string, any>> = audit.json.data;
    const byAddress = new Map<string, { rows: number; requests: number }>();
    for (const row of rows) {
      expect(row).toMatchObject({ outcome: 'refused', status: 401, error_code: 'unauthorized' });
      const m = /\((\d+) requests? from (\S+) in the minute from /.exec(row.error);
      expect(m).not.toBeNull();
      const seen = byAddress.get(m![2]) ?? { rows: 0, requests: 0 };
      byAddress.set(m![2], { rows: seen.rows + 1, requests: seen.requests + Number(m![1]) });
    }
    // A minute boundary during the burst may split an address's requests over two rows; never more.
    expect(byAddress.get('127.0.0.5')?.requests).toBe(40);
    expect(byAddress.get('127.0.0.5')?.rows).toBeLessThanOrEqual(2);
    expect(byAddress.get('127.0.0.6')).toMatchObject({ requests: 3 });
    expect(byAddress.get('127.0.0.6')?.rows).toBeLessThanOrEqual(2);
    expect((await counterByReason(gw, 'switchboard_admin_auth_failures_total')).invalid).toBe(43);
  });

  it("POST /v1/artifacts is charged to the tenant's request limit", async () => {
    const headers = { 'x-tenant-id': 'team-r' };
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(await post(gw.url, '/v1/artifacts', { kind: 'note', content: { i } }, headers));
    expect(answers.map((a) => a.status)).toEqual([201, 201, 429]);
    expect(answers[2].json.error).toMatchObject({ code: 'rate_limit_exceeded' });
    expect(answers[1].headers.get('x-ratelimit-remaining-requests')).toBe('0');
  });

  it('POST /v1/artifacts past artifacts.max_bytes_per_tenant is 413 artifact_quota_exceeded, for that tenant only', async () => {
    const headers = { 'x-tenant-id': 'team-q' };
    const big = (i: number) => ({ kind: 'note', content: { i, text: 'x'.repeat(1200) } });
    expect((await post(gw.url, '/v1/artifacts', big(1), headers)).status).toBe(201);
    expect((await post(gw.url, '/v1/artifacts', big(2), headers)).status).toBe(201);
    const over = await post(gw.url, '/v1/artifacts', big(3), headers);
    expect(over.status).toBe(413);
    expect(over.json.error).toMatchObject({ code: 'artifact_quota_exceeded', limit_bytes: 3000 });
    expect(over.json.error.stored_bytes).toBeGreaterThan(2400);
    // Another tenant has a quota of its own.
    expect((await post(gw.url, '/v1/artifacts', big(3), { 'x-tenant-id': 'team-p' })).status).toBe(201);
    const list = await get(gw.url, '/v1/artifacts', headers);
    expect(list.json.data).toHaveLength(2);
  });
});
