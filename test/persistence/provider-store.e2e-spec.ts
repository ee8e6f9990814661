import { DataSource } from 'typeorm';
import { ProviderEntity } from '../../src/providers/provider.entity';
import { ProviderRecord } from '../../src/providers/provider-store';
import { TypeOrmProviderStore } from '../../src/providers/provider-store.typeorm';
import { FakeClock } from '../support/fake-clock';
import { createTestDatabase, TestDatabase } from './support/test-database';

function provider(name: string, overrides: Partial<ProviderRecord> = {}): ProviderRecord {
  return {
    name,
    secretHash: 'scrypt$16384$8$1$c2FsdA==$a2V5',
    enabled: true,
    maxQueueLen: 100,
    queueTimeoutMs: 30_000,
    requestTimeoutMs: 300_000,
    firstByteTimeoutMs: 300_500,
    maxModelsPerWorker: 256,
    models: ['llama-3-8b', 'qwen2.5:7b'],
    priority: 10,
    capabilities: { 'llama-3-8b': { vision: false, context_length: 8192 } },
    aliases: { fast: 'llama-3-8b' },
    source: 'config',
    costPerGpuHour: 2.5,
    gpusPerWorker: 2,
    translation: 'never',
    ...overrides,
  };
}

describe('TypeOrmProviderStore', () => {
  let db: TestDatabase;
  let ds: DataSource;
  let clock: FakeClock;
  let store: TypeOrmProviderStore;

  beforeAll(async () => {
    db = await createTestDatabase('providers');
    ds = await db.connect();
    await ds.runMigrations();
  });

  afterAll(async () => {
    await db.dispose();
  });

  beforeEach(async () => {
    await ds.getRepository(ProviderEntity).clear();
    clock = new FakeClock();
    store = new TypeOrmProviderStore(ds.getRepository(ProviderEntity), clock);
  });

  it('loads nothing from an empty table', async () => {
    expect(await store.loadAll()).toEqual([]);
  });

  it('round-trips every field', async () => {
    const a = provider('alpha');
    // Values that trip naive mappings: null hash, false flag, empty list, timeouts beyond 32 bits.
    const b = provider('beta', {
      secretHash: null,
      costPerGpuHour: null,
      gpusPerWorker: null,
      translation: null,
      enabled: false,
      models: [],
      queueTimeoutMs: 5_000_000_000,
      requestTimeoutMs: 1,
      firstByteTimeoutMs: null,
      maxQueueLen: 0,
      priority: null,
      capabilities: {},
      aliases: {},
      source: 'admin',
    });
    await store.save(b);
    await store.save(a);
    expect(await store.loadAll()).toEqual([a, b]);
  });

  it('updates a saved provider in place, keeping created_at and moving updated_at', async () => {
    await store.save(provider('alpha'));
    const createdAt = clock.now();
    clock.advance(60_000);
    const changed = provider('alpha', {
      enabled: false,
      models: ['mistral'],
      maxQueueLen: 7,
      firstByteTimeoutMs: 5_000_000_000,
      secretHash: null,
      source: 'admin',
      priority: 0,
      capabilities: { mistral: { tools: true } },
      aliases: { m: 'mistral' },
    });
    await store.save(changed);

    expect(await store.loadAll()).toEqual([changed]);
    const row = await ds.getRepository(ProviderEntity).findOneByOrFail({ name: 'alpha' });
    expect(row.createdAt).toBe(createdAt);
    expect(row.updatedAt).toBe(createdAt + 60_000);
  });

  it('deletes only the named provider', async () => {
    await store.save(provider('alpha'));
    await store.save(provider('beta'));
    await store.delete('alpha');
    await store.delete('does-not-exist');
    expect((await store.loadAll()).map((p) => p.name)).toEqual(['beta']);
  });
});
