import { DataSource, Repository } from 'typeorm';
import { AppConfig } from '../../src/config';
import { StaleCleanupService } from '../../src/registry/stale-cleanup.service';
import { WorkerRecordEntity } from '../../src/registry/worker-record.entity';
import { UsageAggregates } from '../../src/usage/usage-aggregates.service';
import { UsageConfig } from '../../src/config/sections/usage';
import { UsageRecord, utcDay } from '../../src/usage/usage-record';
import { UsageRecordEntity } from '../../src/usage/usage-record.entity';
import { UsageRetention } from '../../src/usage/usage-retention.service';
import { FakeClock } from '../support/fake-clock';
import { RecordingLogger } from './support/recording-logger';
import { TestDatabase } from './support/test-database';
import { closeUsageDatabase, DAY_MS, openUsageDatabase, recordIds, resetUsageRecords, usageRecord, usageTestConfig } from './support/usage-fixture';

// Split from usage-records.e2e-spec.ts (same top-level describe): reading usage records back, and their retention.

describe('usage records', () => {
  let db: TestDatabase;
  let ds: DataSource;
  let repo: Repository<UsageRecordEntity>;
  const sql = new RecordingLogger();
  let clock: FakeClock;

  beforeAll(async () => {
    ({ db, ds, repo } = await openUsageDatabase(sql));
  });

  afterAll(() => closeUsageDatabase(db));

  beforeEach(async () => {
    clock = await resetUsageRecords(repo, sql);
  });

  const config = (usage: Partial<UsageConfig> = {}): AppConfig => usageTestConfig(db, usage);
  const usage = (n: number, overrides: Partial<UsageRecord> = {}): UsageRecord => usageRecord(clock, n, overrides);
  const ids = (): Promise<string[]> => recordIds(repo);

  describe('UsageAggregates', () => {
    const aggregates = () => new UsageAggregates(repo);
    const jan = (day: number, hour = 12) => Date.UTC(2025, 0, day, hour);

    beforeEach(async () => {
      await repo.insert(
        [
          usage(1, { receivedAt: jan(1), tenant: 'team-a', keyId: 'k-a1', promptTokens: 10, completionTokens: 100 }),
          usage(2, { receivedAt: jan(1, 23), tenant: 'team-a', keyId: 'k-a2', promptTokens: 20, completionTokens: 200 }),
          usage(3, { receivedAt: jan(2), tenant: 'team-a', keyId: 'k-a1', status: 502, errorCode: 'worker_error', promptTokens: null, completionTokens: null }),
          usage(4, { receivedAt: jan(2), tenant: 'team-b', keyId: null, servedModel: 'qwen-2', promptTokens: 5, completionTokens: 7 }),
          usage(5, {
            receivedAt: jan(3),
            tenant: 'team-b',
            keyId: null,
            servedModel: null,
            provider: null,
            status: 404,
            errorCode: 'model_not_found',
            promptTokens: null,
            completionTokens: null,
          }),
          // A backend 400 relayed as it was: an error, though not the gateway's.
          usage(6, { receivedAt: jan(3), tenant: 'team-b', keyId: 'k-b1', servedModel: 'qwen-2', status: 400, promptTokens: 3, completionTokens: 0 }),
        ].map((u) => ({ ...u, day: utcDay(u.receivedAt) })),
      );
    });

    it('totals everything without group_by, errors included', async () => {
      expect(await aggregates().totals({})).toEqual([
        { requests: 6, errors: 3, promptTokens: 38, completionTokens: 307, totalTokens: 345, workerSeconds: 4.8, gpuSeconds: 1.2, cost: null },
      ]);
    });

    it('answers zeros when nothing matches', async () => {
      expect(await aggregates().totals({ tenant: 'nobody' })).toEqual([
        { requests: 0, errors: 0, promptTokens: 0, completionTokens: 0, totalTokens: 0, workerSeconds: 0, gpuSeconds: 0, cost: null },
      ]);
      expect(await aggregates().totals({ tenant: 'nobody', groupBy: 'day' })).toEqual([]);
    });

    it('groups by tenant', async () => {
      expect(await aggregates().totals({ groupBy: 'tenant' })).toEqual([
        { group: 'team-a', requests: 3, errors: 1, promptTokens: 30, completionTokens: 300, totalTokens: 330, workerSeconds: 2.4, gpuSeconds: 0.6, cost: null },
        { group: 'team-b', requests: 3, errors: 2, promptTokens: 8, completionTokens: 7, totalTokens: 15, workerSeconds: 2.4, gpuSeconds: 0.6, cost: null },
      ]);
    });

    it('groups by key id, requests without a key last', async () => {
      expect((await aggregates().totals({ groupBy: 'key' })).map((t) => [t.group, t.requests, t.totalTokens])).toEqual([
        ['k-a1', 2, 110],
        ['k-a2', 1, 220],
        ['k-b1', 1, 3],
        [null, 2, 12],
      ]);
    });

    it('groups by served model, unrouted requests last', async () => {
      expect((await aggregates().totals({ groupBy: 'model' })).map((t) => [t.group, t.requests, t.errors])).toEqual([
        ['llama-3-70b', 3, 1],
        ['qwen-2', 2, 1],
        [null, 1, 1],
      ]);
    });

    it('groups by pool, with worker and GPU seconds; cost sums the priced records only', async () => {
      expect((await aggregates().totals({ groupBy: 'pool' })).map((t) => [t.group, t.requests, t.workerSeconds, t.gpuSeconds])).toEqual([
        ['gpu', 5, 4, 1],
        [null, 1, 0.8, 0.2],
      ]);
      await repo.insert([usage(7, { tenant: 'team-c', cost: 0.25 }), usage(8, { tenant: 'team-c', cost: 0.5 }), usage(9, { tenant: 'team-c' })]);
      const [c] = await aggregates().totals({ tenant: 'team-c' });
      expect(c.cost).toBeCloseTo(0.75, 10);
      expect(c.gpuSeconds).toBeCloseTo(0.6, 10);
    });

    it('groups by UTC day', async () => {
      expect((await aggregates().totals({ groupBy: 'day' })).map((t) => [t.group, t.requests, t.promptTokens])).toEqual([
        ['2025-01-01', 2, 30],
        ['2025-01-02', 2, 5],
        ['2025-01-03', 2, 3],
      ]);
    });

    it('filters by tenant, key and time (since inclusive, until exclusive)', async () => {
      expect((await aggregates().totals({ tenant: 'team-a', groupBy: 'key' })).map((t) => t.group)).toEqual(['k-a1', 'k-a2']);
      expect(await aggregates().totals({ keyId: 'k-a1' })).toEqual([
        { requests: 2, errors: 1, promptTokens: 10, completionTokens: 100, totalTokens: 110, workerSeconds: 1.6, gpuSeconds: 0.4, cost: null },
      ]);
      expect((await aggregates().totals({ since: jan(2), groupBy: 'day' })).map((t) => t.group)).toEqual(['2025-01-02', '2025-01-03']);
      expect((await aggregates().totals({ until: jan(2), groupBy: 'day' })).map((t) => t.group)).toEqual(['2025-01-01']);
      expect((await aggregates().totals({ since: jan(1, 23), until: jan(3), tenant: 'team-a' }))[0].requests).toBe(2);
    });
  });

  describe('retention', () => {
    const RETENTION_DAYS = 30;

    it('deletes records older than the retention with the stale-cleanup sweep, and keeps younger ones', async () => {
      const now = clock.now();
      const cutoff = now - RETENTION_DAYS * DAY_MS;
      await repo.insert([
        usage(1, { receivedAt: cutoff - DAY_MS }),
        usage(2, { receivedAt: cutoff - 1 }),
        usage(3, { receivedAt: cutoff }),
        usage(4, { receivedAt: now - 1000 }),
      ]);
      const cfg = config({ retentionMs: RETENTION_DAYS * DAY_MS });
      const cleanup = new StaleCleanupService(ds.getRepository(WorkerRecordEntity), clock, cfg);
      new UsageRetention(repo, cfg, cleanup);

      expect(await cleanup.sweep()).toEqual({ markedOffline: 0, deleted: 0, pruned: { usage_records: 2 } });
      expect(await ids()).toEqual(['r-3', 'r-4']);
      expect(await cleanup.sweep()).toEqual({ markedOffline: 0, deleted: 0, pruned: { usage_records: 0 } });
    });

    it('deletes a large backlog in chunks of bounded size', async () => {
      class SmallChunks extends UsageRetention {
        protected override readonly chunkSize = 3;
      }
      const old = clock.now() - 100 * DAY_MS;
      await repo.insert(Array.from({ length: 8 }, (_, i) => usage(i, { receivedAt: old + i })));
      await repo.insert(usage(99));
      sql.clear();

      expect(await new SmallChunks(repo, config({ retentionMs: RETENTION_DAYS * DAY_MS })).prune(clock.now())).toBe(8);
      expect(sql.writesTo('usage_records')).toHaveLength(3); // 3 + 3 + 2
      expect(await ids()).toEqual(['r-99']);
    });

    it('keeps everything with a retention of 0, registering no task', async () => {
      await repo.insert(usage(1, { receivedAt: 1 }));
      const cfg = config({ retentionMs: 0 });
      const cleanup = new StaleCleanupService(ds.getRepository(WorkerRecordEntity), clock, cfg);
      new UsageRetention(repo, cfg, cleanup);
      expect(await cleanup.sweep()).toEqual({ markedOffline: 0, deleted: 0 });
      expect(await repo.count()).toBe(1);
    });
  });
});
