import { Logger } from '@nestjs/common';
import { DataSource, Repository } from 'typeorm';
import { AppConfig } from '../../src/config';
import { StaleCleanupService } from '../../src/registry/stale-cleanup.service';
import { WorkerRecordEntity } from '../../src/registry/worker-record.entity';
import { FakeClock } from '../support/fake-clock';
import { createTestDatabase, TestDatabase, testConfig } from './support/test-database';

const TIMEOUT_MS = 45_000;
const FLUSH_MS = 5_000;
const SWEEP_MS = 60_000;
const RETENTION_MS = 24 * 3600_000;
/** A persisted heartbeat older than this (timeout plus one flush interval) means the worker is gone. */
const STALE_AFTER_MS = TIMEOUT_MS + FLUSH_MS;

describe('StaleCleanupService', () => {
  let db: TestDatabase;
  let ds: DataSource;
  let repo: Repository<WorkerRecordEntity>;
  let config: AppConfig;
  let clock: FakeClock;
  let cleanup: StaleCleanupService;

  beforeAll(async () => {
    db = await createTestDatabase('stale_cleanup');
    ds = await db.connect();
    await ds.runMigrations();
    repo = ds.getRepository(WorkerRecordEntity);
    config = testConfig(db.url, {
      instanceId: 'gw-me',
      heartbeatTimeoutMs: TIMEOUT_MS,
      heartbeatFlushIntervalMs: FLUSH_MS,
      staleSweepIntervalMs: SWEEP_MS,
      workerRecordRetentionMs: RETENTION_MS,
    });
    Logger.overrideLogger(['error']);
  });

  afterAll(async () => {
    await db.dispose();
    Logger.overrideLogger(['log', 'error', 'warn']);
  });

  beforeEach(async () => {
    await repo.clear();
    clock = new FakeClock();
    cleanup = new StaleCleanupService(repo, clock, config);
  });

  afterEach(async () => {
    await cleanup.beforeApplicationShutdown();
  });

  /** An online record whose last persisted heartbeat is `silentForMs` old. */
  function online(id: string, silentForMs: number, instance = 'gw-other'): WorkerRecordEntity {
    const now = clock.now();
    return {
      id,
      provider: 'local',
      name: id,
      models: ['m'],
      maxConcurrent: 1,
      gatewayInstanceId: instance,
      remoteAddress: '10.0.0.1',
      connectedAt: now - silentForMs - 3600_000,
      lastHeartbeatAt: now - silentForMs,
      disconnectedAt: null,
      state: 'online',
    };
  }

  function offline(id: string, disconnectedForMs: number): WorkerRecordEntity {
    const now = clock.now();
    return { ...online(id, disconnectedForMs + 1000), state: 'offline', disconnectedAt: now - disconnectedForMs };
  }

  async function states(): Promise<Record<string, string>> {
    const rows = await repo.find();
    return Object.fromEntries(rows.map((r) => [r.id, r.state]));
  }

  it('marks online records of a crashed gateway offline once their heartbeat is older than timeout + one flush', async () => {
    await repo.insert([online('crashed', STALE_AFTER_MS + 1), online('borderline', STALE_AFTER_MS), online('alive', 10_000, 'gw-me')]);

    expect(await cleanup.sweep()).toEqual({ markedOffline: 1, deleted: 0 });

    expect(await states()).toEqual({ crashed: 'offline', borderline: 'online', alive: 'online' });
    const crashed = await repo.findOneByOrFail({ id: 'crashed' });
    expect(crashed.disconnectedAt).toBe(crashed.lastHeartbeatAt);
  });

  it('deletes offline records older than the retention and keeps younger ones', async () => {
    await repo.insert([
      offline('expired', RETENTION_MS + 1),
      offline('kept', RETENTION_MS - 1),
      { ...offline('no-disconnect-time', 0), disconnectedAt: null, lastHeartbeatAt: clock.now() - RETENTION_MS - 1 },
      // online but silent for longer than the retention: marked offline, then deleted in the same pass
      online('silent', RETENTION_MS + 1),
    ]);

    expect(await cleanup.sweep()).toEqual({ markedOffline: 1, deleted: 1 + 1 + 1 });
    expect(await states()).toEqual({ kept: 'offline' });
  });

  it('at boot, marks records this instance left online offline, leaving other instances’ live records alone', async () => {
    await repo.insert([online('mine', 1_000, 'gw-me'), online('theirs', 1_000, 'gw-other')]);

    await cleanup.onModuleInit();

    expect(await states()).toEqual({ mine: 'offline', theirs: 'online' });
    const mine = await repo.findOneByOrFail({ id: 'mine' });
    expect(mine.disconnectedAt).toBe(clock.now() - 1_000);
  });

  it('sweeps every staleSweepIntervalMs on the clock, and stops at shutdown', async () => {
    const sweeps = jest.spyOn(cleanup, 'sweep');
    await cleanup.onModuleInit(); // includes one pass at boot
    expect(sweeps).toHaveBeenCalledTimes(1);
    await repo.insert(online('quiet', 0));

    await clock.advanceAsync(SWEEP_MS - 1); // stale by now, but no pass is due yet
    expect(sweeps).toHaveBeenCalledTimes(1);
    expect(await states()).toEqual({ quiet: 'online' });

    clock.advance(1);
    expect(sweeps).toHaveBeenCalledTimes(2);
    await sweeps.mock.results[1].value;
    expect(await states()).toEqual({ quiet: 'offline' });

    await cleanup.beforeApplicationShutdown();
    expect(clock.pendingTimers()).toBe(0);
    clock.advance(SWEEP_MS * 3);
    expect(sweeps).toHaveBeenCalledTimes(2);
  });

  it('never rejects when the database fails', async () => {
    const broken = await db.connect();
    const brokenCleanup = new StaleCleanupService(broken.getRepository(WorkerRecordEntity), clock, config);
    await broken.destroy();
    await expect(brokenCleanup.sweep()).resolves.toEqual({ markedOffline: 0, deleted: 0 });
  });
});
