import { Logger } from '@nestjs/common';
import { FakeClock } from '../../test/support/fake-clock';
import { loadConfig } from '../config';
import { MetricsService } from '../observability/metrics.service';
import { TenantsService } from '../tenancy/tenants.service';
import { ApiKeyRecord, ApiKeyStore } from './api-key-store';
import { ApiKeysService } from './api-keys.service';
import { KeyedTenants } from './keyed-tenants';

function key(id: string, tenant: string, fields: Partial<ApiKeyRecord> = {}): ApiKeyRecord {
  return {
    id,
    name: id,
    keyHash: `hash-${id}`,
    prefix: 'sb-x',
    tenant,
    enabled: true,
    source: 'admin',
    rpm: null,
    tpm: null,
    priority: null,
    models: null,
    expiresAt: null,
    createdAt: 0,
    lastUsedAt: null,
    revokedAt: null,
    ...fields,
  };
}

describe('KeyedTenants', () => {
  it('a tenant has an active key while one enabled key has not expired; expiry needs no timer', () => {
    const t = new KeyedTenants();
    t.put(key('a', 'acme', { expiresAt: 1000 }));
    t.put(key('b', 'acme', { expiresAt: 2000 }));
    t.put(key('c', 'other', { enabled: false }));
    expect(t.hasActiveKey('acme', 1500)).toBe(true);
    expect(t.hasActiveKey('acme', 2000)).toBe(false);
    expect(t.hasActiveKey('other', 0)).toBe(false);
    t.drop('b'); // the key with the latest expiry goes: the next latest one counts
    expect(t.hasActiveKey('acme', 999)).toBe(true);
    expect(t.hasActiveKey('acme', 1000)).toBe(false);
    t.put(key('a', 'acme', { expiresAt: 1000, enabled: false })); // revoked
    expect(t.hasActiveKey('acme', 0)).toBe(false);
  });

  it('a key that never expires keeps its tenant keyed until it is revoked, deleted or moved', () => {
    const t = new KeyedTenants();
    t.put(key('a', 'acme'));
    t.put(key('b', 'acme', { expiresAt: 10 }));
    expect(t.hasActiveKey('acme', 1e15)).toBe(true);
    t.put(key('a', 'beta')); // moved to another tenant
    expect(t.hasActiveKey('acme', 1e15)).toBe(false);
    expect(t.hasActiveKey('acme', 5)).toBe(true);
    expect(t.hasActiveKey('beta', 1e15)).toBe(true);
    t.drop('a');
    t.drop('a'); // twice: nothing more happens
    expect(t.hasActiveKey('beta', 0)).toBe(false);
  });
});

/** A store whose records count every property read, to measure work independently of wall time. */
class CountingStore extends ApiKeyStore {
  reads = 0;
  constructor(private readonly rows: ApiKeyRecord[]) {
    super();
  }
  async loadAll() {
    return this.rows.map(
      (r) =>
        new Proxy(r, {
          get: (target, p, receiver) => {
            this.reads++;
            return Reflect.get(target, p, receiver);
          },
        }),
    );
  }
  async save() {}
  async delete() {}
  async recordLastUsed() {}
}

describe('ApiKeysService with many keys (issue 16 review: boot was O(N²))', () => {
  beforeAll(() => Logger.overrideLogger(['error']));
  afterAll(() => Logger.overrideLogger(['log', 'error', 'warn']));

  it('loads N keys with O(N) work and changes one with O(1) work (counted record reads, not wall time)', async () => {
    const N = 3000;
    // Few tenants, many keys each: the case a pass over all keys per key made quadratic.
    const rows = Array.from({ length: N }, (_, i) => key(`k${i}`, `t${i % 3}`, i % 2 ? { expiresAt: Date.now() + 1e9 + i } : {}));
    const store = new CountingStore(rows);
    const config = loadConfig({});
    config.apiKeys.keys = Array.from({ length: 200 }, (_, i) => ({ name: `cfg${i}`, keySha256: `cfg-hash-${i}`, tenant: 't0', enabled: true }));
    const clock = new FakeClock();
    const service = new ApiKeysService(config, clock, store, new TenantsService(config), new MetricsService());
    try {
      await service.onModuleInit();
      // The quadratic version read each record's `tenant` once per key indexed: N² = 9e6 reads here.
      expect(store.reads).toBeLessThan(40 * N);

      store.reads = 0;
      const { record } = await service.create({ name: 'new', tenant: 't1' });
      await service.update(record.id, { tenant: 't2' });
      await service.update(record.id, { enabled: false });
      await service.update('k1', { enabled: false }); // an expiring key of t1
      await service.remove('k2');
      expect(store.reads).toBeLessThan(200);
    } finally {
      await service.beforeApplicationShutdown();
    }
  });
});
