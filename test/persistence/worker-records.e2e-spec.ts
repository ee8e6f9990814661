import { Logger } from '@nestjs/common';
import { DataSource, Repository } from 'typeorm';
import { AppConfig } from '../../src/config';
import { WorkerRecordEntity } from '../../src/registry/worker-record.entity';
import { WorkerConnectedRecord } from '../../src/registry/worker-records.port';
import { TypeOrmWorkerRecords } from '../../src/registry/worker-records.service';
import { FakeClock } from '../support/fake-clock';
import { RecordingLogger } from './support/recording-logger';
import { createTestDatabase, TestDatabase, testConfig } from './support/test-database';

const FLUSH_MS = 5_000;
const WINDOW_MS = 300_000;

describe('TypeOrmWorkerRecords', () => {
  let db: TestDatabase;
  let ds: DataSource;
  let repo: Repository<WorkerRecordEntity>;
  const sql = new RecordingLogger();
  let config: AppConfig;
  let clock: FakeClock;
  let records: TypeOrmWorkerRecords;

  beforeAll(async () => {
    db = await createTestDatabase('worker_records');
    ds = await db.connect(sql);
    await ds.runMigrations();
    repo = ds.getRepository(WorkerRecordEntity);
    config = testConfig(db.url, { heartbeatFlushIntervalMs: FLUSH_MS, recentWorkerWindowMs: WINDOW_MS });
    Logger.overrideLogger(['error']);
  });

  afterAll(async () => {
    await db.dispose();
    Logger.overrideLogger(['log', 'error', 'warn']);
  });

  beforeEach(async () => {
    await repo.clear();
    clock = new FakeClock();
    records = await start(new TypeOrmWorkerRecords(repo, clock, config));
    sql.clear();
  });

  afterEach(async () => {
    await records.close();
  });

  async function start<T extends TypeOrmWorkerRecords>(r: T): Promise<T> {
    await r.onModuleInit();
    return r;
  }

  function worker(id: string, overrides: Partial<WorkerConnectedRecord> = {}): WorkerConnectedRecord {
    return {
      id,
      provider: 'local',
      name: `gpu-${id}`,
      models: ['llama-3-8b'],
      maxConcurrent: 4,
      remoteAddress: '10.0.0.7',
      connectedAt: clock.now(),
      ...overrides,
    };
  }

  async function row(id: string): Promise<WorkerRecordEntity> {
    return repo.findOneByOrFail({ id });
  }

  describe('connect', () => {
    it('writes the row in the background right away, without waiting for a flush', async () => {
      const w = worker('w1', { models: ['llama-3-8b', '*'] });
      records.recordConnected(w);
      await records.whenIdle();

      expect(await row('w1')).toEqual({
        id: 'w1',
        provider: 'local',
        name: 'gpu-w1',
        models: ['llama-3-8b', '*'],
        maxConcurrent: 4,
        gatewayInstanceId: 'gw-test',
        remoteAddress: '10.0.0.7',
        connectedAt: w.connectedAt,
        lastHeartbeatAt: w.connectedAt,
        disconnectedAt: null,
        state: 'online',
      });
    });

    it('returns before anything is written', () => {
      records.recordConnected(worker('w1'));
      expect(sql.writesTo('worker_records')).toEqual([]);
    });

    it('brings back a record with a reused id as a fresh online row', async () => {
      records.recordConnected(worker('w1'));
      records.recordDisconnected('w1', clock.now() + 1000);
      clock.advance(10_000);
      records.recordConnected(worker('w1', { models: ['qwen'] }));
      await records.whenIdle();
      expect(await row('w1')).toMatchObject({ state: 'online', disconnectedAt: null, models: ['qwen'], connectedAt: clock.now() });
    });

    it('keeps writes of one worker in order: connect then disconnect always ends offline', async () => {
      for (let i = 0; i < 50; i++) {
        records.recordConnected(worker(`w${i}`));
        records.recordDisconnected(`w${i}`, clock.now() + 1);
      }
      await records.whenIdle();
      expect(await repo.countBy({ state: 'offline' })).toBe(50);
    });
  });

  describe('heartbeats', () => {
    it('coalesces 100 heartbeats in memory and writes them in one UPDATE at the next flush', async () => {
      const ids = Array.from({ length: 10 }, (_, i) => `w${i}`);
      const connectedAt = clock.now();
      for (const id of ids) records.recordConnected(worker(id));
      await records.whenIdle();
      sql.clear();

      for (let beat = 1; beat <= 10; beat++) {
        for (const [i, id] of ids.entries()) records.recordHeartbeat(id, connectedAt + beat * 100 + i);
      }
      await records.whenIdle();
      clock.advance(FLUSH_MS - 1);
      await records.whenIdle();
      expect(sql.writesTo('worker_records')).toEqual([]);
      expect((await row('w3')).lastHeartbeatAt).toBe(connectedAt);

      clock.advance(1);
      await records.whenIdle();
      const writes = sql.writesTo('worker_records');
      expect(writes).toHaveLength(1);
      expect(writes[0]).toMatch(/^UPDATE/);
      for (const [i, id] of ids.entries()) expect((await row(id)).lastHeartbeatAt).toBe(connectedAt + 1000 + i);
    });

    it('keeps the latest heartbeat when they arrive out of order', async () => {
      records.recordConnected(worker('w1'));
      records.recordHeartbeat('w1', clock.now() + 2000);
      records.recordHeartbeat('w1', clock.now() + 1000);
      await records.flush();
      expect((await row('w1')).lastHeartbeatAt).toBe(clock.now() + 2000);
    });

    it('writes nothing when no heartbeat arrived', async () => {
      records.recordConnected(worker('w1'));
      await records.whenIdle();
      sql.clear();
      clock.advance(FLUSH_MS * 5);
      await records.whenIdle();
      expect(sql.writesTo('worker_records')).toEqual([]);
    });

    it('splits a batch larger than one statement allows into several UPDATEs of one transaction', async () => {
      class SmallBatches extends TypeOrmWorkerRecords {
        protected override readonly maxWorkersPerStatement = 3;
      }
      await records.close();
      records = await start(new SmallBatches(repo, clock, config));
      for (let i = 0; i < 7; i++) records.recordConnected(worker(`w${i}`));
      await records.whenIdle();
      sql.clear();
      for (let i = 0; i < 7; i++) records.recordHeartbeat(`w${i}`, clock.now() + 500 + i);
      await records.flush();

      expect(sql.writesTo('worker_records')).toHaveLength(3);
      expect(sql.statements.some((s) => /^(BEGIN|START TRANSACTION)/i.test(s))).toBe(true);
      for (let i = 0; i < 7; i++) expect((await row(`w${i}`)).lastHeartbeatAt).toBe(clock.now() + 500 + i);
    });

    it('brings a live worker marked offline by a sweep back online', async () => {
      records.recordConnected(worker('w1'));
      await records.whenIdle();
      await repo.update({ id: 'w1' }, { state: 'offline', disconnectedAt: clock.now() });
      records.recordHeartbeat('w1', clock.now() + 100);
      await records.flush();
      expect(await row('w1')).toMatchObject({ state: 'online', disconnectedAt: null, lastHeartbeatAt: clock.now() + 100 });
    });

    it('writes pending heartbeats on shutdown, and nothing after', async () => {
      records.recordConnected(worker('w1'));
      records.recordHeartbeat('w1', clock.now() + 700);
      await records.beforeApplicationShutdown();
      expect((await row('w1')).lastHeartbeatAt).toBe(clock.now() + 700);

      sql.clear();
      records.recordHeartbeat('w1', clock.now() + 900);
      records.recordDisconnected('w1', clock.now() + 1000);
      clock.advance(FLUSH_MS * 2);
      await records.whenIdle();
      expect(sql.writesTo('worker_records')).toEqual([]);
      expect(clock.pendingTimers()).toBe(0);
    });
  });

  describe('disconnect', () => {
    it('marks the row offline with its disconnect time, folding in the pending heartbeat', async () => {
      const t0 = clock.now();
      records.recordConnected(worker('w1'));
      records.recordHeartbeat('w1', t0 + 1000);
      records.recordDisconnected('w1', t0 + 2000);
      await records.whenIdle();
      expect(await row('w1')).toMatchObject({ state: 'offline', disconnectedAt: t0 + 2000, lastHeartbeatAt: t0 + 1000 });

      sql.clear();
      clock.advance(FLUSH_MS);
      await records.whenIdle();
      expect(sql.writesTo('worker_records')).toEqual([]);
    });

    it('ignores heartbeats that arrive after the disconnect', async () => {
      records.recordConnected(worker('w1'));
      records.recordDisconnected('w1', clock.now() + 10);
      records.recordHeartbeat('w1', clock.now() + 20);
      await records.flush();
      expect(await row('w1')).toMatchObject({ state: 'offline', lastHeartbeatAt: clock.now() });
    });
  });

  it('records model changes in the background', async () => {
    records.recordConnected(worker('w1'));
    records.recordModels('w1', ['mistral-7b', 'phi-3']);
    await records.whenIdle();
    expect((await row('w1')).models).toEqual(['mistral-7b', 'phi-3']);
  });

  describe('recentlyKnowsModel', () => {
    it('knows the models of connected workers, per provider', () => {
      records.recordConnected(worker('w1', { models: ['llama-3-8b'] }));
      records.recordConnected(worker('w2', { provider: 'team-b', models: ['qwen'] }));
      expect(records.recentlyKnowsModel('local', 'llama-3-8b')).toBe(true);
      expect(records.recentlyKnowsModel('local', 'qwen')).toBe(false);
      expect(records.recentlyKnowsModel('team-b', 'qwen')).toBe(true);
      expect(records.recentlyKnowsModel('nobody', 'llama-3-8b')).toBe(false);
    });

    it('follows model changes', () => {
      records.recordConnected(worker('w1', { models: ['llama-3-8b'] }));
      records.recordModels('w1', ['phi-3']);
      expect(records.recentlyKnowsModel('local', 'phi-3')).toBe(true);
      expect(records.recentlyKnowsModel('local', 'llama-3-8b')).toBe(false);
    });

    it('keeps knowing a disconnected worker’s models for the window, then forgets them', () => {
      records.recordConnected(worker('w1'));
      clock.advance(3600_000); // connected for an hour: only the disconnect time matters
      records.recordDisconnected('w1', clock.now());
      clock.advance(WINDOW_MS);
      expect(records.recentlyKnowsModel('local', 'llama-3-8b')).toBe(true);
      clock.advance(1);
      expect(records.recentlyKnowsModel('local', 'llama-3-8b')).toBe(false);
    });

    it('treats a wildcard worker as knowing every model', () => {
      records.recordConnected(worker('w1', { models: ['*'] }));
      expect(records.recentlyKnowsModel('local', 'anything-at-all')).toBe(true);
    });

    it('loads workers seen within the window from the database at boot', async () => {
      const now = clock.now();
      const base = { provider: 'local', name: 'gpu', maxConcurrent: 1, gatewayInstanceId: 'gw-other', remoteAddress: '10.0.0.9' };
      await repo.insert([
        // disconnected a minute ago: known
        {
          ...base,
          id: 'recent',
          models: ['recent-model'],
          connectedAt: now - 900_000,
          lastHeartbeatAt: now - 61_000,
          disconnectedAt: now - 60_000,
          state: 'offline',
        },
        // disconnected just beyond the window: forgotten
        {
          ...base,
          id: 'old',
          models: ['old-model'],
          connectedAt: now - 900_000,
          lastHeartbeatAt: now - WINDOW_MS - 2000,
          disconnectedAt: now - WINDOW_MS - 1000,
          state: 'offline',
        },
        // online on another gateway, heartbeat 10 s ago: known
        {
          ...base,
          id: 'elsewhere',
          models: ['remote-model'],
          connectedAt: now - 900_000,
          lastHeartbeatAt: now - 10_000,
          disconnectedAt: null,
          state: 'online',
        },
        // online but silent since long before the window (a crashed gateway): forgotten
        {
          ...base,
          id: 'ghost',
          models: ['ghost-model'],
          connectedAt: now - 9_000_000,
          lastHeartbeatAt: now - 8_000_000,
          disconnectedAt: null,
          state: 'online',
        },
        {
          ...base,
          id: 'other-provider',
          provider: 'team-b',
          models: ['b-model'],
          connectedAt: now - 1000,
          lastHeartbeatAt: now - 1000,
          disconnectedAt: null,
          state: 'online',
        },
      ]);
      const booted = await start(new TypeOrmWorkerRecords(repo, clock, config));
      try {
        expect(booted.recentlyKnowsModel('local', 'recent-model')).toBe(true);
        expect(booted.recentlyKnowsModel('local', 'remote-model')).toBe(true);
        expect(booted.recentlyKnowsModel('local', 'old-model')).toBe(false);
        expect(booted.recentlyKnowsModel('local', 'ghost-model')).toBe(false);
        expect(booted.recentlyKnowsModel('local', 'b-model')).toBe(false);
        expect(booted.recentlyKnowsModel('team-b', 'b-model')).toBe(true);
        // Loaded rows are history: they expire with the window like any disconnected worker.
        clock.advance(WINDOW_MS - 60_000 + 1);
        expect(booted.recentlyKnowsModel('local', 'recent-model')).toBe(false);
      } finally {
        await booted.close();
      }
    });
  });

  it('never throws and never blocks when the database is gone', async () => {
    const broken = await db.connect();
    const brokenRecords = await start(new TypeOrmWorkerRecords(broken.getRepository(WorkerRecordEntity), clock, config));
    await broken.destroy();

    expect(() => {
      brokenRecords.recordConnected(worker('w1'));
      brokenRecords.recordHeartbeat('w1', clock.now() + 1);
      brokenRecords.recordModels('w1', ['x']);
      brokenRecords.recordDisconnected('w1', clock.now() + 2);
    }).not.toThrow();
    expect(brokenRecords.recentlyKnowsModel('local', 'x')).toBe(true);
    clock.advance(FLUSH_MS);
    await expect(brokenRecords.close()).resolves.toBeUndefined();
  });
});
