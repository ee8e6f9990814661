import { DataSource, Repository } from 'typeorm';
import { ApiKeyEntity } from '../../src/api-keys/api-key.entity';
import { ApiKeyRecord } from '../../src/api-keys/api-key-store';
import { TypeOrmApiKeyStore } from '../../src/api-keys/api-key-store.typeorm';
import { RecordingLogger } from './support/recording-logger';
import { createTestDatabase, TestDatabase } from './support/test-database';

const T0 = Date.UTC(2025, 0, 1);

function key(id: string, overrides: Partial<ApiKeyRecord> = {}): ApiKeyRecord {
  return {
    id,
    name: `key ${id}`,
    keyHash: `${id.padEnd(8, '0')}`.repeat(8).slice(0, 64),
    prefix: 'sb-AbCdEfGh',
    tenant: 'team-a',
    enabled: true,
    source: 'admin',
    rpm: 60,
    tpm: 100_000,
    priority: 'low',
    models: ['llama-3-8b', 'qwen2.5:7b'],
    expiresAt: T0 + 86_400_000,
    createdAt: T0,
    lastUsedAt: null,
    revokedAt: null,
    ...overrides,
  };
}

describe('TypeOrmApiKeyStore', () => {
  let db: TestDatabase;
  let ds: DataSource;
  let repo: Repository<ApiKeyEntity>;
  let store: TypeOrmApiKeyStore;
  const sql = new RecordingLogger();

  beforeAll(async () => {
    db = await createTestDatabase('api_keys');
    ds = await db.connect(sql);
    await ds.runMigrations();
    repo = ds.getRepository(ApiKeyEntity);
  });

  afterAll(async () => {
    await db.dispose();
  });

  beforeEach(async () => {
    await repo.clear();
    store = new TypeOrmApiKeyStore(repo);
    sql.clear();
  });

  it('loads nothing from an empty table', async () => {
    expect(await store.loadAll()).toEqual([]);
  });

  it('round-trips every field, in creation order', async () => {
    const a = key('a');
    // Values that trip naive mappings: nulls everywhere, false, limits beyond 32 bits, a config key without prefix.
    const b = key('b', {
      prefix: '',
      source: 'config',
      enabled: false,
      rpm: null,
      tpm: 9_007_199_254_740_991,
      priority: null,
      models: null,
      expiresAt: null,
      createdAt: T0 + 1,
      lastUsedAt: T0 + 5,
      revokedAt: T0 + 6,
    });
    await store.save(b);
    await store.save(a);
    expect(await store.loadAll()).toEqual([a, b]);
  });

  it('stores only the hash and the display prefix of a key', async () => {
    await store.save(key('a'));
    const [row] = await ds.query("SELECT * FROM api_keys WHERE id = 'a'");
    expect(Object.keys(row).sort()).toEqual(
      [
        'created_at',
        'enabled',
        'expires_at',
        'id',
        'key_hash',
        'last_used_at',
        'models',
        'name',
        'prefix',
        'priority',
        'revoked_at',
        'rpm',
        'source',
        'tenant',
        'tpm',
        'max_concurrent',
      ].sort(),
    );
  });

  it('updates a saved key in place, keeping created_at and last_used_at', async () => {
    await store.save(key('a'));
    await store.recordLastUsed([['a', T0 + 100]]);
    const changed = key('a', {
      name: 'renamed',
      tenant: 'team-b',
      enabled: false,
      revokedAt: T0 + 200,
      rpm: null,
      models: ['m'],
      createdAt: T0 + 999,
      lastUsedAt: null,
    });
    await store.save(changed);
    expect(await store.loadAll()).toEqual([{ ...changed, createdAt: T0, lastUsedAt: T0 + 100 }]);
  });

  it('refuses a second key with the same hash under another id', async () => {
    await store.save(key('a'));
    await expect(store.save(key('b', { keyHash: key('a').keyHash }))).rejects.toThrow();
  });

  it('deletes only the given key', async () => {
    await store.save(key('a'));
    await store.save(key('b'));
    await store.delete('a');
    await store.delete('does-not-exist');
    expect((await store.loadAll()).map((k) => k.id)).toEqual(['b']);
  });

  describe('recordLastUsed', () => {
    it('writes many keys in one UPDATE, each with its own time, ignoring unknown ids', async () => {
      for (const id of ['a', 'b', 'c']) await store.save(key(id));
      sql.clear();
      await store.recordLastUsed([
        ['a', T0 + 10],
        ['b', T0 + 20],
        ['gone', T0 + 30],
      ]);
      expect(sql.writesTo('api_keys')).toHaveLength(1);
      const byId = Object.fromEntries((await store.loadAll()).map((k) => [k.id, k.lastUsedAt]));
      expect(byId).toEqual({ a: T0 + 10, b: T0 + 20, c: null });
    });

    it('never moves last_used_at backwards (another gateway may have written a later time)', async () => {
      await store.save(key('a'));
      await store.recordLastUsed([['a', T0 + 50]]);
      await store.recordLastUsed([['a', T0 + 40]]);
      expect((await store.loadAll())[0].lastUsedAt).toBe(T0 + 50);
      await store.recordLastUsed([['a', T0 + 60]]);
      expect((await store.loadAll())[0].lastUsedAt).toBe(T0 + 60);
    });

    it('writes nothing for an empty batch', async () => {
      await store.recordLastUsed([]);
      expect(sql.writesTo('api_keys')).toEqual([]);
    });

    it('splits batches beyond one statement into several statements of one transaction', async () => {
      const ids = Array.from({ length: 4001 }, (_, i) => `k${i}`);
      const rows = ids.map((id, i) => ({ ...key(id), keyHash: String(i).padStart(64, '0') }));
      for (let i = 0; i < rows.length; i += 200) await repo.insert(rows.slice(i, i + 200));
      sql.clear();
      await store.recordLastUsed(ids.map((id, i) => [id, T0 + i] as const));
      expect(sql.writesTo('api_keys')).toHaveLength(2);
      const stored = await repo.find({ select: { id: true, lastUsedAt: true } });
      expect(stored).toHaveLength(4001);
      expect(stored.every((r) => r.lastUsedAt === T0 + Number(r.id.slice(1)))).toBe(true);
    });
  });
});
