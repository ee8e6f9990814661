import { DataSource } from 'typeorm';
import { TenantEntity } from '../../src/tenancy/tenant.entity';
import { TypeOrmTenantStore } from '../../src/tenancy/tenant-store.typeorm';
import { TenantSettings } from '../../src/config/sections/tenancy';
import { FakeClock } from '../support/fake-clock';
import { createTestDatabase, TestDatabase } from './support/test-database';

describe('TypeOrmTenantStore', () => {
  let db: TestDatabase;
  let ds: DataSource;
  let clock: FakeClock;
  let store: TypeOrmTenantStore;

  beforeAll(async () => {
    db = await createTestDatabase('tenants');
    ds = await db.connect();
    await ds.runMigrations();
  });

  afterAll(async () => {
    await db.dispose();
  });

  beforeEach(async () => {
    await ds.getRepository(TenantEntity).clear();
    clock = new FakeClock();
    store = new TypeOrmTenantStore(ds.getRepository(TenantEntity), clock);
  });

  const full: TenantSettings = {
    rpm: 600,
    tpm: 5_000_000_000,
    tokensPerDay: 9_007_199_254_740_991,
    priority: 'low',
    maxPriority: 'normal',
    maxQueued: 0,
    models: ['llama-3-8b', 'qwen2.5:7b'],
    sessionTokens: 250_000,
    sessionTimeSecs: 3600,
  };

  it('loads nothing from an empty table', async () => {
    expect(await store.loadAll()).toEqual([]);
  });

  it('round-trips every setting, and no setting at all', async () => {
    const now = clock.now();
    expect(await store.save('team-b', {})).toEqual({ id: 'team-b', settings: {}, createdAt: now, updatedAt: now });
    await store.save('team-a', full);
    expect(await store.loadAll()).toEqual([
      { id: 'team-a', settings: full, createdAt: now, updatedAt: now },
      { id: 'team-b', settings: {}, createdAt: now, updatedAt: now },
    ]);
  });

  it('replaces the settings as a whole, keeping created_at and moving updated_at', async () => {
    const created = clock.now();
    await store.save('team-a', full);
    clock.advance(60_000);
    const saved = await store.save('team-a', { rpm: 5, models: [] });
    expect(saved).toEqual({ id: 'team-a', settings: { rpm: 5, models: [] }, createdAt: created, updatedAt: created + 60_000 });
    expect(await store.loadAll()).toEqual([saved]);
  });

  it('deletes only the given tenant', async () => {
    await store.save('a', full);
    await store.save('b', full);
    await store.delete('a');
    await store.delete('nobody');
    expect((await store.loadAll()).map((t) => t.id)).toEqual(['b']);
  });
});
