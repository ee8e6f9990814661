import { Logger } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { FakeClock } from '../../test/support/fake-clock';
import { GatewayError } from '../common/gateway-error';
import { AppConfig, loadConfig } from '../config';
import { MetricsService } from '../observability/metrics.service';
import { TenantsService } from '../tenancy/tenants.service';
import { hashKey } from './api-key-material';
import { ApiKeyRecord, ApiKeyStore } from './api-key-store';
import { ApiKeysService } from './api-keys.service';

class MemoryKeyStore extends ApiKeyStore {
  readonly rows = new Map<string, ApiKeyRecord>();
  readonly lastUsedWrites: Array<Array<readonly [string, number]>> = [];
  async loadAll() {
    return [...this.rows.values()].map((r) => ({ ...r }));
  }
  async save(r: ApiKeyRecord) {
    this.rows.set(r.id, { ...r, lastUsedAt: this.rows.get(r.id)?.lastUsedAt ?? r.lastUsedAt });
  }
  async delete(id: string) {
    this.rows.delete(id);
  }
  async recordLastUsed(entries: ReadonlyArray<readonly [string, number]>) {
    this.lastUsedWrites.push([...entries]);
    for (const [id, at] of entries) {
      const row = this.rows.get(id);
      if (row) row.lastUsedAt = at;
    }
  }
}

function request(headers: Record<string, string>, address = '10.0.0.9'): FastifyRequest {
  return { headers: { ...headers }, raw: { socket: { remoteAddress: address } } } as unknown as FastifyRequest;
}

const CONFIG_KEY = 'a-config-file-key-that-is-long-enough';

describe('ApiKeysService', () => {
  beforeAll(() => Logger.overrideLogger(['error']));
  afterAll(() => Logger.overrideLogger(['log', 'error', 'warn']));
  let clock: FakeClock;
  let store: MemoryKeyStore;
  let metrics: MetricsService;
  let services: ApiKeysService[];

  beforeEach(() => {
    clock = new FakeClock();
    store = new MemoryKeyStore();
    metrics = new MetricsService();
    services = [];
  });
  afterEach(async () => {
    for (const s of services) await s.beforeApplicationShutdown();
  });

  async function start(env: Record<string, string> = {}, patch: (c: AppConfig) => void = () => undefined): Promise<ApiKeysService> {
    const config = loadConfig({ CLIENT_AUTH_FAILURE_LIMIT: '3', API_KEY_LAST_USED_FLUSH_SECS: '5', ...env });
    patch(config);
    const s = new ApiKeysService(config, clock, store, new TenantsService(config), metrics);
    await s.onModuleInit();
    services.push(s);
    return s;
  }

  async function failures(): Promise<Record<string, number>> {
    const metric = (await metrics.registry.getSingleMetric('switchboard_client_auth_failures_total')!.get()).values;
    return Object.fromEntries(metric.map((v) => [v.labels.reason as string, v.value]));
  }

  describe('when keys are required', () => {
    it('accepts a key as a bearer token or in x-api-key, and takes it out of the headers', async () => {
      const keys = await start({ REQUIRE_API_KEYS: 'true' });
      const { record, key } = await keys.create({ name: 'ci', tenant: 'team-a' });
      const bearer = request({ authorization: `Bearer ${key}`, 'x-other': '1' });
      expect(keys.authenticate(bearer)).toBe(record);
      expect(bearer.headers).toEqual({ 'x-other': '1' });
      const xKey = request({ 'x-api-key': key, authorization: 'Bearer backend-key' });
      expect(keys.authenticate(xKey)).toBe(record);
      // A credential that is not a gateway key is the backend's: it stays and is forwarded.
      expect(xKey.headers).toEqual({ authorization: 'Bearer backend-key' });
    });

    it('refuses missing, unknown, revoked, disabled and expired keys with 401 invalid_api_key', async () => {
      const keys = await start({ REQUIRE_API_KEYS: 'true', CLIENT_AUTH_FAILURE_LIMIT: '100' });
      const revoked = await keys.create({ name: 'r', tenant: 't' });
      await keys.update(revoked.record.id, { enabled: false });
      const expiring = await keys.create({ name: 'e', tenant: 't', expiresAt: clock.now() + 1000 });
      const deleted = await keys.create({ name: 'd', tenant: 't' });
      await keys.remove(deleted.record.id);
      clock.advance(1000);
      const cases: Array<Record<string, string>> = [
        {},
        { authorization: 'Bearer sb-unknown' },
        { authorization: 'Bearer some-backend-key' },
        { 'x-api-key': revoked.key },
        { 'x-api-key': expiring.key },
        { 'x-api-key': deleted.key },
      ];
      for (const headers of cases) {
        const req = request(headers);
        const refused = keys.authenticate(req) as GatewayError;
        expect(refused).toBeInstanceOf(GatewayError);
        expect(refused.code).toBe('invalid_api_key');
        expect(req.headers).toEqual(headers);
      }
      expect(await failures()).toEqual({ missing: 1, invalid: 3, revoked: 1, expired: 1 });
    });

    it('refuses a key with characters a key cannot have with 400, and two different keys with 400', async () => {
      const keys = await start({ REQUIRE_API_KEYS: 'true' });
      const a = await keys.create({ name: 'a', tenant: 't' });
      const b = await keys.create({ name: 'b', tenant: 't' });
      expect((keys.authenticate(request({ 'x-api-key': 'sb-a\tb' })) as GatewayError).details.param).toBe('x-api-key');
      expect((keys.authenticate(request({ 'x-api-key': 'caf\u00e9' })) as GatewayError).code).toBe('invalid_request');
      expect((keys.authenticate(request({ authorization: `Bearer ${a.key}`, 'x-api-key': b.key })) as GatewayError).code).toBe('invalid_request');
      expect(keys.authenticate(request({ authorization: `Bearer ${a.key}`, 'x-api-key': a.key }))).toBe(a.record);
    });

    it('blocks an address after repeated unknown keys, only that address, and never a valid key (issue 16 M8)', async () => {
      const keys = await start({ REQUIRE_API_KEYS: 'true', CLIENT_AUTH_FAILURE_LIMIT: '3', CLIENT_AUTH_BLOCK_SECS: '30' });
      const { record, key } = await keys.create({ name: 'a', tenant: 't' });
      for (let i = 0; i < 3; i++) expect((keys.authenticate(request({ 'x-api-key': `sb-guess-${i}` })) as GatewayError).code).toBe('invalid_api_key');
      const blocked = keys.authenticate(request({ 'x-api-key': 'sb-guess-3' })) as GatewayError;
      expect(blocked.code).toBe('auth_rate_limited');
      expect(blocked.details.retryAfterMs).toBe(30_000);
      // A valid key is looked up first: accepted from the throttled address too.
      expect(keys.authenticate(request({ 'x-api-key': key }))).toBe(record);
      expect((keys.authenticate(request({ 'x-api-key': 'sb-guess-4' }, '10.0.0.10')) as GatewayError).code).toBe('invalid_api_key');
      clock.advance(60_000);
      expect((keys.authenticate(request({ 'x-api-key': 'sb-guess-5' })) as GatewayError).code).toBe('invalid_api_key');
      expect(await failures()).toEqual({ invalid: 5, rate_limited: 1 });
    });

    it('does not block an address for revoked or expired keys (they are not guesses)', async () => {
      const keys = await start({ REQUIRE_API_KEYS: 'true', CLIENT_AUTH_FAILURE_LIMIT: '2' });
      const old = await keys.create({ name: 'old', tenant: 't' });
      await keys.update(old.record.id, { enabled: false });
      for (let i = 0; i < 5; i++) keys.authenticate(request({ 'x-api-key': old.key }));
      const fresh = await keys.create({ name: 'new', tenant: 't' });
      expect(keys.authenticate(request({ 'x-api-key': fresh.key }))).toBe(fresh.record);
    });
  });

  describe('when keys are not required', () => {
    it('lets requests without a gateway key through and forwards their credentials', async () => {
      const keys = await start();
      const req = request({ authorization: 'Bearer backend-key', 'x-api-key': 'anthropic-backend-key' });
      expect(keys.authenticate(req)).toBeNull();
      expect(req.headers).toEqual({ authorization: 'Bearer backend-key', 'x-api-key': 'anthropic-backend-key' });
      expect(keys.authenticate(request({}))).toBeNull();
    });

    it('still authenticates gateway keys, and refuses unknown or revoked ones instead of forwarding them', async () => {
      const keys = await start();
      const { record, key } = await keys.create({ name: 'a', tenant: 't' });
      const req = request({ authorization: `Bearer ${key}` });
      expect(keys.authenticate(req)).toBe(record);
      expect(req.headers).toEqual({});
      expect((keys.authenticate(request({ authorization: 'Bearer sb-typo' })) as GatewayError).code).toBe('invalid_api_key');
      await keys.update(record.id, { enabled: false });
      expect((keys.authenticate(request({ authorization: `Bearer ${key}` })) as GatewayError).code).toBe('invalid_api_key');
    });
  });

  describe('identify', () => {
    it("gives the key's tenant, id and limits, and otherwise identifies by headers", async () => {
      const keys = await start();
      const { key, record } = await keys.create({ name: 'a', tenant: 'team-a', rpm: 10, priority: 'low', models: ['m1'] });
      expect(keys.identify(request({ 'x-api-key': key }))).toEqual({
        tenant: 'team-a',
        priority: 2,
        allowedModels: new Set(['m1']),
        keyId: record.id,
        keyLimits: { rpm: 10 },
      });
      expect(keys.identify(request({ 'x-tenant-id': 'team-b' }))).toEqual({ tenant: 'team-b', priority: 1, allowedModels: undefined });
      expect((keys.identify(request({ 'x-api-key': key, 'x-tenant-id': 'team-b' })) as GatewayError).code).toBe('tenant_mismatch');
    });
  });

  describe('last_used_at', () => {
    it('is written behind: one write per flush period for every key used meanwhile', async () => {
      const keys = await start({ API_KEY_LAST_USED_FLUSH_SECS: '5' });
      const a = await keys.create({ name: 'a', tenant: 't' });
      const b = await keys.create({ name: 'b', tenant: 't' });
      const t1 = clock.now();
      for (let i = 0; i < 10; i++) keys.authenticate(request({ 'x-api-key': a.key }));
      clock.advance(1000);
      keys.authenticate(request({ 'x-api-key': b.key }));
      expect(keys.get(a.record.id)!.lastUsedAt).toBe(t1);
      await clock.advanceAsync(3999);
      await keys.whenIdle();
      expect(store.lastUsedWrites).toEqual([]);
      await clock.advanceAsync(1); // the flush period (from boot)
      await keys.whenIdle();
      expect(store.lastUsedWrites).toEqual([
        [
          [a.record.id, t1],
          [b.record.id, t1 + 1000],
        ],
      ]);
      await clock.advanceAsync(5000);
      await keys.whenIdle();
      expect(store.lastUsedWrites).toHaveLength(1); // nothing used: nothing written
    });

    it('is flushed at shutdown', async () => {
      const keys = await start();
      const a = await keys.create({ name: 'a', tenant: 't' });
      keys.authenticate(request({ 'x-api-key': a.key }));
      await keys.beforeApplicationShutdown();
      expect(store.rows.get(a.record.id)!.lastUsedAt).toBe(clock.now());
    });
  });

  describe('admin changes', () => {
    it('stores only the hash and a display prefix, and returns the key once', async () => {
      const keys = await start();
      const { record, key } = await keys.create({ name: 'a', tenant: 't' });
      expect(JSON.stringify([...store.rows.values()])).not.toContain(key.slice(11));
      expect(store.rows.get(record.id)).toMatchObject({ keyHash: hashKey(key), prefix: key.slice(0, 11), source: 'admin' });
      expect(JSON.stringify(keys.list())).not.toContain(key.slice(11));
    });

    it('never bring back a key deleted while a change to it was being written', async () => {
      const keys = await start();
      const { record, key } = await keys.create({ name: 'a', tenant: 't' });
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      const save = store.save.bind(store);
      jest.spyOn(store, 'save').mockImplementationOnce(async (r) => {
        await gate; // the PATCH's write is slow…
        await save(r);
      });
      const patching = keys.update(record.id, { rpm: 1 });
      await keys.remove(record.id); // …and the DELETE finishes meanwhile
      release();
      expect(await patching).toBeUndefined();
      expect(keys.get(record.id)).toBeUndefined();
      expect(store.rows.has(record.id)).toBe(false);
      expect((keys.authenticate(request({ 'x-api-key': key })) as GatewayError).code).toBe('invalid_api_key');
    });

    it('are written through and survive a restart', async () => {
      const first = await start();
      const { record, key } = await first.create({ name: 'a', tenant: 't', models: ['m'] });
      await first.update(record.id, { tpm: 5, models: null });
      const second = await start();
      expect(second.get(record.id)).toMatchObject({ tpm: 5, models: null });
      expect(second.authenticate(request({ 'x-api-key': key }))).toMatchObject({ id: record.id });
    });
  });

  describe('keys from the config file', () => {
    const declare = (c: AppConfig, overrides: Partial<AppConfig['apiKeys']['keys'][number]> = {}) => {
      c.apiKeys.keys = [{ name: 'bot', tenant: 'team-a', keySha256: hashKey(CONFIG_KEY), enabled: true, rpm: 7, ...overrides }];
    };

    it('are authenticated by hash, listed with source config, and rewritten at every boot', async () => {
      const keys = await start({}, (c) => declare(c));
      expect(keys.authenticate(request({ authorization: `Bearer ${CONFIG_KEY}` }))).toMatchObject({ id: 'cfg_bot', source: 'config', rpm: 7, prefix: '' });
      await start({}, (c) => declare(c, { rpm: 9 }));
      expect(store.rows.get('cfg_bot')).toMatchObject({ rpm: 9 });
      await start();
      expect(store.rows.has('cfg_bot')).toBe(false);
    });

    it('may be revoked through the API, and stay revoked across boots while the file holds the same hash', async () => {
      const keys = await start({}, (c) => declare(c));
      await expect(keys.update('cfg_bot', { rpm: 1 })).rejects.toMatchObject({ code: 'conflict' });
      await expect(keys.remove('cfg_bot')).rejects.toMatchObject({ code: 'conflict' });
      await keys.update('cfg_bot', { enabled: false });
      expect((keys.authenticate(request({ 'x-api-key': CONFIG_KEY })) as GatewayError).code).toBe('invalid_api_key');
      const again = await start({}, (c) => declare(c));
      expect(again.statusOf(again.get('cfg_bot')!)).toBe('revoked');
      const rotated = await start({}, (c) => declare(c, { keySha256: hashKey('a-new-config-key-material') }));
      expect(rotated.statusOf(rotated.get('cfg_bot')!)).toBe('active');
    });

    it('refuses to boot when a config key is the same key as an admin key', async () => {
      const keys = await start();
      const { key } = await keys.create({ name: 'a', tenant: 't' });
      await expect(start({}, (c) => declare(c, { keySha256: hashKey(key) }))).rejects.toThrow(/same key as API key key_/);
    });
  });
});
