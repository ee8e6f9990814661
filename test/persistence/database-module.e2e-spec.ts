import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { BeforeApplicationShutdown, Injectable, Logger, Module } from '@nestjs/common';
import { Test, TestingModule } from '@nestjs/testing';
import { getRepositoryToken, TypeOrmModule } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { ApiKeyEntity } from '../../src/api-keys/api-key.entity';
import { CLOCK } from '../../src/common/clock';
import { AppConfig, ConfigModule } from '../../src/config';
import { createDataSource } from '../../src/database/data-source-options';
import { DatabaseModule } from '../../src/database/database.module';
import { CommonModule } from '../../src/common/common.module';
import { ProviderStore } from '../../src/providers/provider-store';
import { ProvidersModule } from '../../src/providers/providers.module';
import { TypeOrmProviderStore } from '../../src/providers/provider-store.typeorm';
import { WorkerRecordsModule } from '../../src/registry/registry.module';
import { WorkerRecordEntity } from '../../src/registry/worker-record.entity';
import { WorkerRecords } from '../../src/registry/worker-records.port';
import { TypeOrmWorkerRecords } from '../../src/registry/worker-records.service';
import { FakeClock } from '../support/fake-clock';
import { createTestDatabase, TestDatabase, testConfig } from './support/test-database';

/** Stands in for a feature module that disconnects its workers while the application shuts down. */
@Injectable()
class DrainsWorkersOnShutdown implements BeforeApplicationShutdown {
  constructor(private readonly records: WorkerRecords) {}
  async beforeApplicationShutdown(): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, 20));
    this.records.recordDisconnected('drained', 5_000);
  }
}

@Module({ providers: [DrainsWorkersOnShutdown] })
class DrainingModule {}

function connection(id: string, connectedAt: number) {
  return { id, provider: 'local', name: 'gpu', models: ['m'], maxConcurrent: 1, remoteAddress: '10.0.0.1', connectedAt };
}

describe('DatabaseModule', () => {
  let db: TestDatabase;
  let config: AppConfig;
  let clock: FakeClock;

  beforeAll(async () => {
    db = await createTestDatabase('module');
    // On SQLite, a file in directories that do not exist yet (the default is ./data/switchboard.db).
    const url = db.kind === 'sqlite' ? `sqlite:${join(dirname(db.url.slice('sqlite:'.length)), 'data', 'nested', 'switchboard.db')}` : db.url;
    config = testConfig(url, { instanceId: 'gw-module' });
    Logger.overrideLogger(['error']);
  });

  afterAll(async () => {
    await db.dispose();
    Logger.overrideLogger(['log', 'error', 'warn']);
  });

  beforeEach(() => {
    clock = new FakeClock();
  });

  async function boot(...features: Array<new () => unknown>): Promise<TestingModule> {
    const moduleRef = await Test.createTestingModule({
      imports: [
        ConfigModule.forRoot(config),
        CommonModule,
        DatabaseModule.forRoot(config),
        // The DataSource alone; the features register their own entities and stores.
        WorkerRecordsModule,
        ProvidersModule,
        TypeOrmModule.forFeature([ApiKeyEntity]),
        ...features,
      ],
    })
      .overrideProvider(CLOCK)
      .useValue(clock)
      .compile();
    await moduleRef.init();
    return moduleRef;
  }

  it('boots on an empty database, creating the SQLite directory and running the migrations', async () => {
    const app = await boot();
    try {
      if (db.kind === 'sqlite') expect(existsSync(config.databaseUrl.slice('sqlite:'.length))).toBe(true);
      const ds = app.get(DataSource);
      expect(ds.isInitialized).toBe(true);
      expect(await ds.showMigrations()).toBe(false); // nothing pending
      const qr = ds.createQueryRunner();
      try {
        expect(await qr.hasTable('worker_records')).toBe(true);
      } finally {
        await qr.release();
      }
    } finally {
      await app.close();
    }
  });

  it('provides the TypeORM stores behind the persistence ports, and repositories for every entity', async () => {
    const app = await boot();
    try {
      expect(app.get(ProviderStore)).toBeInstanceOf(TypeOrmProviderStore);
      expect(app.get(WorkerRecords)).toBe(app.get(TypeOrmWorkerRecords));
      expect(app.get(getRepositoryToken(ApiKeyEntity))).toBeDefined();
      expect(app.get(CLOCK)).toBe(clock);
    } finally {
      await app.close();
    }
  });

  it('writes pending heartbeats on close, before the DataSource is destroyed', async () => {
    const app = await boot();
    const records = app.get(WorkerRecords);
    const t0 = clock.now();
    records.recordConnected(connection('w1', t0));
    records.recordHeartbeat('w1', t0 + 1234);
    await app.close();
    expect(app.get(DataSource).isInitialized).toBe(false);

    const check = await createDataSource(config.databaseUrl).initialize();
    try {
      const row = await check.getRepository(WorkerRecordEntity).findOneByOrFail({ id: 'w1' });
      expect(row).toMatchObject({ state: 'online', lastHeartbeatAt: t0 + 1234, gatewayInstanceId: 'gw-module' });
    } finally {
      await check.destroy();
    }
  });

  it('writes disconnects that other modules record during their own shutdown hooks', async () => {
    const app = await boot(DrainingModule);
    app.get(WorkerRecords).recordConnected(connection('drained', 1_000));
    await app.close();

    const check = await createDataSource(config.databaseUrl).initialize();
    try {
      const row = await check.getRepository(WorkerRecordEntity).findOneByOrFail({ id: 'drained' });
      expect(row).toMatchObject({ state: 'offline', disconnectedAt: 5_000 });
    } finally {
      await check.destroy();
    }
  });

  it('at the next boot of the same instance, marks the records it left online offline', async () => {
    const first = await boot();
    // A row as a killed process leaves it: online, heartbeat too recent for the stale sweep to act.
    const lastHeartbeatAt = clock.now() - 10_000;
    await first
      .get(DataSource)
      .getRepository(WorkerRecordEntity)
      .insert({
        ...connection('left-online', lastHeartbeatAt - 60_000),
        gatewayInstanceId: 'gw-module',
        lastHeartbeatAt,
        disconnectedAt: null,
        state: 'online',
      });
    await first.close();

    const second = await boot();
    try {
      const row = await second.get(DataSource).getRepository(WorkerRecordEntity).findOneByOrFail({ id: 'left-online' });
      expect(row).toMatchObject({ state: 'offline', disconnectedAt: lastHeartbeatAt });
    } finally {
      await second.close();
    }
  });
});
