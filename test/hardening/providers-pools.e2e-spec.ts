import { startGateway, TestGateway, TEST_ADMIN_TOKEN, TEST_SECRET } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { admin, chat, get, post } from '../support/http';
import { autoRespond, workerView, writeConfig } from '../support/routing';

/**
 * The priority floor, tenants restricted to pools, and `/v1/models` showing a caller only what it
 * may use. Two pools serve the same model `both-model`; `local` ranks first (priority 10).
 */
const CONFIG = `
providers:
  - name: local
    secret: ${TEST_SECRET}
    priority: 10
  - name: p2
    secret: p2-secret
    priority: 30
  - name: open
    secret: open-secret
tenants:
  team-a:
    pools: [local]
  team-free: {}
`;

const P2 = { provider: 'p2', secret: 'p2-secret' };
const OPEN = { provider: 'open', secret: 'open-secret' };

async function sendMany(gw: TestGateway, model: string, n: number, headers: Record<string, string> = {}): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < n; i++) statuses.push((await post(gw.url, '/v1/chat/completions', chat(model, { i }), headers)).status);
  return statuses;
}

const ids = (res: { json: any }) => (res.json.data as Array<{ id: string }>).map((m) => m.id).sort();

describe('hardening: priority floor, tenant pools, /v1/models per caller', () => {
  let gw: TestGateway;
  let local: ScriptedWorker;
  let p2: ScriptedWorker;
  beforeAll(async () => {
    gw = await startGateway({ CONFIG_FILE: writeConfig(CONFIG) });
    // p2's worker claims the best priority there is; local's declares none.
    ({ worker: local } = await ScriptedWorker.register(gw.workerUrl, { models: ['both-model', 'local-only'], max_concurrent: 8 }));
    ({ worker: p2 } = await ScriptedWorker.register(gw.workerUrl, { models: ['both-model', 'p2-only'], max_concurrent: 8, priority: 0 }, P2));
    autoRespond(local);
    autoRespond(p2);
  });
  afterAll(async () => {
    local.close();
    p2.close();
    await gw.close();
  });

  describe('priority floor', () => {
    it("a worker declaring priority 0 never outranks a pool configured at 10: it ranks at its provider's floor (30)", async () => {
      const before = { local: local.count('request'), p2: p2.count('request') };
      // H2's second half: a worker's own claim does not beat the priority its provider was configured with.
      const p2Id = p2.frames.find((f) => f.type === 'register_ack')!.worker_id;
      expect((await workerView(gw, p2Id)).priority).toBe(30);
      expect(await sendMany(gw, 'both-model', 6)).toEqual(Array(6).fill(200));
      expect(local.count('request') - before.local).toBe(6);
      expect(p2.count('request') - before.p2).toBe(0);
    });

    it('a provider without a configured priority leaves the ranking to its workers; a worker of a floored pool may still rank itself lower', async () => {
      // The routing specification's priority_only story: within a provider that sets no priority,
      // the worker declaring the lower number is preferred (which models it may serve at all is
      // decided by model ownership, not by priority).
      const eager = await ScriptedWorker.register(gw.workerUrl, { models: ['open-model'], priority: 0 }, OPEN);
      const backup = await ScriptedWorker.register(gw.workerUrl, { models: ['open-model'], priority: 90 }, OPEN);
      const silent = await ScriptedWorker.register(gw.workerUrl, { models: ['open-model'] }, OPEN);
      expect((await workerView(gw, eager.ack.worker_id)).priority).toBe(0);
      expect((await workerView(gw, backup.ack.worker_id)).priority).toBe(90);
      expect((await workerView(gw, silent.ack.worker_id)).priority).toBe(50);
      // A pool with a floor of 10: a worker declaring 70 keeps 70.
      const demoted = await ScriptedWorker.register(gw.workerUrl, { models: ['local-only'], priority: 70 });
      expect((await workerView(gw, demoted.ack.worker_id)).priority).toBe(70);
      eager.worker.close();
      backup.worker.close();
      silent.worker.close();
      demoted.worker.close();
    });
  });

  describe('tenant pools (tenants.<t>.pools)', () => {
    it('a tenant restricted to local never reaches p2: a model only p2 serves is 404 model_not_found', async () => {
      const before = p2.count('request');
      const res = await post(gw.url, '/v1/chat/completions', chat('p2-only'), { 'x-tenant-id': 'team-a' });
      expect(res.status).toBe(404);
      expect(res.json.error.code).toBe('model_not_found');
      // Same in the Anthropic dialect.
      const anth = await post(
        gw.url,
        '/v1/messages',
        { model: 'p2-only', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] },
        { 'x-tenant-id': 'team-a' },
      );
      expect(anth.status).toBe(404);
      expect(anth.json).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
      expect(p2.count('request')).toBe(before);
      // Another tenant reaches it.
      expect(await sendMany(gw, 'p2-only', 1, { 'x-tenant-id': 'team-free' })).toEqual([200]);
      expect(p2.count('request')).toBe(before + 1);
    });

    it("a shared model goes only to the tenant's pool, even when the other pool ranks better", async () => {
      const p2Before = p2.count('request');
      // Make p2 the better choice for everybody else: local's floor rises above p2's.
      expect((await admin(gw.url, 'PATCH', '/admin/providers/local', TEST_ADMIN_TOKEN, { priority: 40 })).status).toBe(200);
      expect(await sendMany(gw, 'both-model', 5, { 'x-tenant-id': 'team-a' })).toEqual(Array(5).fill(200));
      expect(p2.count('request')).toBe(p2Before);
      expect(await sendMany(gw, 'both-model', 2, { 'x-tenant-id': 'team-free' })).toEqual([200, 200]);
      expect(p2.count('request')).toBe(p2Before + 2);
      expect((await admin(gw.url, 'PATCH', '/admin/providers/local', TEST_ADMIN_TOKEN, { priority: 10 })).status).toBe(200);
    });

    it("pinning a pool outside the tenant's pools is refused (400), never served", async () => {
      const before = p2.count('request');
      const res = await post(gw.url, '/v1/chat/completions', chat('both-model'), { 'x-tenant-id': 'team-a', 'x-switchboard-provider': 'p2' });
      expect(res.status).toBe(400);
      expect(res.json.error.message).toMatch(/not one of this tenant's pools/);
      expect(p2.count('request')).toBe(before);
    });

    it('the tenants admin API sets pools (stored), and they apply at once', async () => {
      const put = await admin(gw.url, 'PUT', '/admin/tenants/team-b', TEST_ADMIN_TOKEN, { pools: ['p2'] });
      expect(put.status).toBe(200);
      expect(put.json.settings.pools).toEqual(['p2']);
      expect((await admin(gw.url, 'GET', '/admin/tenants/team-b', TEST_ADMIN_TOKEN)).json.settings.pools).toEqual(['p2']);
      const localBefore = local.count('request');
      expect((await post(gw.url, '/v1/chat/completions', chat('local-only'), { 'x-tenant-id': 'team-b' })).status).toBe(404);
      expect(await sendMany(gw, 'both-model', 3, { 'x-tenant-id': 'team-b' })).toEqual(Array(3).fill(200));
      expect(local.count('request')).toBe(localBefore);
      const bad = await admin(gw.url, 'PUT', '/admin/tenants/team-b', TEST_ADMIN_TOKEN, { pools: [] });
      expect(bad.status).toBe(400);
    });
  });

  describe('/v1/models per caller', () => {
    it('a key restricted to models lists only those models', async () => {
      const created = await admin(gw.url, 'POST', '/admin/keys', TEST_ADMIN_TOKEN, { name: 'narrow', tenant: 'team-free', models: ['both-model'] });
      expect(created.status).toBe(201);
      const all = await get(gw.url, '/v1/models');
      expect(ids(all)).toEqual(['both-model', 'local-only', 'p2-only']);
      const narrow = await get(gw.url, '/v1/models', { authorization: `Bearer ${created.json.key}` });
      expect(narrow.status).toBe(200);
      expect(ids(narrow)).toEqual(['both-model']);
    });

    it('a tenant restricted to pools lists only what its pools serve', async () => {
      expect(ids(await get(gw.url, '/v1/models', { 'x-tenant-id': 'team-a' }))).toEqual(['both-model', 'local-only']);
      const p2View = await get(gw.url, '/v1/models', { 'x-tenant-id': 'team-b' });
      expect(ids(p2View)).toEqual(['both-model', 'p2-only']);
      expect(p2View.json.data.every((m: { owned_by: string }) => m.owned_by === 'p2')).toBe(true);
    });
  });
});
