import { Logger } from '@nestjs/common';
import { DataSource, Repository } from 'typeorm';
import { AppConfig } from '../../src/config';
import { MetricsService } from '../../src/observability/metrics.service';
import { StaleCleanupService } from '../../src/registry/stale-cleanup.service';
import { WorkerRecordEntity } from '../../src/registry/worker-record.entity';
import { UsageAggregates } from '../../src/usage/usage-aggregates.service';
import { UsageConfig } from '../../src/config/sections/usage';
import { UsageRecord, utcDay } from '../../src/usage/usage-record';
import { UsageRecordEntity } from '../../src/usage/usage-record.entity';
import { MAX_WRITE_ATTEMPTS, TypeOrmUsageRecorder } from '../../src/usage/usage-recorder.service';
import { UsageRetention } from '../../src/usage/usage-retention.service';
import { parsePrometheusText } from '../observability/prometheus-text';
import { FakeClock } from '../support/fake-clock';
import { RecordingLogger } from './support/recording-logger';
import { createTestDatabase, TestDatabase, testConfig } from './support/test-database';

const FLUSH_MS = 5_000;
const DAY_MS = 86_400_000;

describe('usage records', () => {
  let db: TestDatabase;
  let ds: DataSource;
  let repo: Repository<UsageRecordEntity>;
  const sql = new RecordingLogger();
  let clock: FakeClock;

  beforeAll(async () => {
    db = await createTestDatabase('usage_records');
    ds = await db.connect(sql);
    await ds.runMigrations();
    repo = ds.getRepository(UsageRecordEntity);
    Logger.overrideLogger(['error']);
  });

  afterAll(async () => {
    await db.dispose();
    Logger.overrideLogger(['log', 'error', 'warn']);
  });

  beforeEach(async () => {
    await repo.clear();
    clock = new FakeClock();
    sql.clear();
  });

  function config(usage: Partial<UsageConfig> = {}): AppConfig {
    const base = testConfig(db.url);
    return { ...base, usage: { ...base.usage, flushIntervalMs: FLUSH_MS, batchSize: 100, bufferSize: 1000, ...usage } };
  }

  /** A finished request as the dispatcher describes it; `n` makes ids and values distinct. */
  function usage(n: number, overrides: Partial<UsageRecord> = {}): UsageRecord {
    const receivedAt = overrides.receivedAt ?? clock.now() - 1000;
    return {
      id: `r-${n}`,
      receivedAt,
      day: utcDay(receivedAt),
      tenant: 'team-a',
      keyId: null,
      requestedModel: 'gpt-4',
      servedModel: 'llama-3-70b',
      provider: 'gpu',
      workerId: 'w-1',
      workerName: 'gpu-box-1',
      endpoint: '/v1/chat/completions',
      status: 200,
      errorCode: null,
      promptTokens: 10,
      completionTokens: 20,
      queueWaitMs: 5,
      ttfbMs: 100,
      durationMs: 900,
      workerMs: 800,
      backendMs: null,
      gpuMs: 200,
      cost: null,
      ...overrides,
    };
  }

  async function metricValue(metrics: MetricsService, family: string, labels: Record<string, string> = {}): Promise<number | undefined> {
    const f = parsePrometheusText(await metrics.registry.metrics()).get(family);
    return f?.samples.find((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
  }

  async function ids(): Promise<string[]> {
    return (await repo.find({ select: { id: true } })).map((r) => r.id).sort((a, b) => Number(a.slice(2)) - Number(b.slice(2)));
  }

  describe('TypeOrmUsageRecorder (write-behind)', () => {
    let metrics: MetricsService;
    let recorder: TypeOrmUsageRecorder;

    async function start<T extends TypeOrmUsageRecorder>(r: T): Promise<T> {
      r.onModuleInit();
      return r;
    }

    /** Lets writes started off the request path (zero-delay timers on the fake clock) run to the end. */
    async function settleWrites(): Promise<void> {
      for (let i = 0; i < 10; i++) {
        clock.advance(0);
        await recorder.whenIdle();
        await new Promise((resolve) => setImmediate(resolve));
      }
    }

    beforeEach(async () => {
      metrics = new MetricsService();
      recorder = await start(new TypeOrmUsageRecorder(repo, clock, config(), metrics));
    });

    afterEach(async () => {
      await recorder.close();
    });

    it('returns at once, and writes nothing before the flush period', async () => {
      for (let i = 0; i < 7; i++) recorder.record(usage(i));
      expect(recorder.buffered).toBe(7);
      clock.advance(FLUSH_MS - 1);
      await settleWrites();
      expect(sql.writesTo('usage_records')).toEqual([]);
      expect(await repo.count()).toBe(0);
    });

    it('writes the records of many requests in one INSERT per flush', async () => {
      for (let i = 0; i < 7; i++) recorder.record(usage(i));
      clock.advance(FLUSH_MS);
      await settleWrites();

      const writes = sql.writesTo('usage_records');
      expect(writes).toHaveLength(1);
      expect(writes[0]).toMatch(/^INSERT/);
      expect(await repo.count()).toBe(7);
      expect(recorder.buffered).toBe(0);
      expect(await metricValue(metrics, 'switchboard_usage_records_written_total')).toBe(7);

      // The next batch is the next statement; a period without records writes nothing.
      for (let i = 7; i < 10; i++) recorder.record(usage(i));
      clock.advance(FLUSH_MS);
      await settleWrites();
      clock.advance(FLUSH_MS);
      await settleWrites();
      expect(sql.writesTo('usage_records')).toHaveLength(2);
      expect(await repo.count()).toBe(10);
    });

    it('round-trips every field, nulls and 64-bit times included', async () => {
      const full = usage(1, { keyId: 'key-1', receivedAt: Date.UTC(2025, 5, 30, 23, 59, 59, 999), day: '2025-06-30' });
      const bare = usage(2, {
        servedModel: null,
        provider: null,
        workerId: null,
        workerName: null,
        status: 404,
        errorCode: 'model_not_found',
        promptTokens: null,
        completionTokens: null,
        queueWaitMs: 0,
        ttfbMs: null,
        durationMs: 1,
      });
      recorder.record(full);
      recorder.record(bare);
      await recorder.flush();
      expect(await repo.findOneByOrFail({ id: 'r-1' })).toEqual(full);
      expect(await repo.findOneByOrFail({ id: 'r-2' })).toEqual(bare);
    });

    it('writes as soon as a batch is full, without waiting for the period, one INSERT per batch', async () => {
      await recorder.close();
      recorder = await start(new TypeOrmUsageRecorder(repo, clock, config({ batchSize: 5 }), metrics));
      for (let i = 0; i < 12; i++) recorder.record(usage(i));
      expect(sql.writesTo('usage_records')).toEqual([]); // never inside record()
      await settleWrites();
      expect(sql.writesTo('usage_records')).toHaveLength(2);
      expect(await repo.count()).toBe(10);
      expect(recorder.buffered).toBe(2);

      clock.advance(FLUSH_MS);
      await settleWrites();
      expect(sql.writesTo('usage_records')).toHaveLength(3);
      expect(await repo.count()).toBe(12);
    });

    it('is bounded: while the database is slow, the oldest records are dropped and counted', async () => {
      class SlowDatabase extends TypeOrmUsageRecorder {
        release!: () => void;
        private readonly gate = new Promise<void>((resolve) => (this.release = resolve));
        protected override async insert(rows: UsageRecord[]): Promise<void> {
          await this.gate;
          await super.insert(rows);
        }
      }
      await recorder.close();
      const slow = await start(new SlowDatabase(repo, clock, config({ batchSize: 5, bufferSize: 10 }), metrics));
      recorder = slow;
      for (let i = 0; i < 5; i++) slow.record(usage(i));
      clock.advance(0); // the first batch (r-0 … r-4) is now being written, and the database hangs
      for (let i = 5; i < 17; i++) slow.record(usage(i));

      expect(slow.buffered).toBe(10);
      expect(await metricValue(metrics, 'switchboard_usage_records_dropped_total', { reason: 'buffer_full' })).toBe(2);
      expect(await metricValue(metrics, 'switchboard_usage_records_buffered')).toBe(10);

      slow.release();
      await slow.flush();
      expect(await ids()).toEqual(['r-0', 'r-1', 'r-2', 'r-3', 'r-4', ...Array.from({ length: 10 }, (_, i) => `r-${i + 7}`)]);
    });

    it('retries a failed batch on the next periods, then gives it up (counted) so it cannot block the rest', async () => {
      class FlakyDatabase extends TypeOrmUsageRecorder {
        failuresLeft = 0;
        protected override async insert(rows: UsageRecord[]): Promise<void> {
          if (this.failuresLeft > 0) {
            this.failuresLeft--;
            throw new Error('database unavailable');
          }
          await super.insert(rows);
        }
      }
      await recorder.close();
      const flaky = await start(new FlakyDatabase(repo, clock, config(), metrics));
      recorder = flaky;

      flaky.failuresLeft = 2;
      for (let i = 0; i < 3; i++) flaky.record(usage(i));
      clock.advance(FLUSH_MS);
      await settleWrites();
      expect(flaky.buffered).toBe(3); // back in the buffer
      flaky.record(usage(3));
      clock.advance(FLUSH_MS);
      await settleWrites();
      clock.advance(FLUSH_MS);
      await settleWrites();
      expect(await ids()).toEqual(['r-0', 'r-1', 'r-2', 'r-3']);

      flaky.failuresLeft = Infinity;
      for (let i = 4; i < 6; i++) flaky.record(usage(i));
      for (let attempt = 0; attempt < MAX_WRITE_ATTEMPTS; attempt++) {
        clock.advance(FLUSH_MS);
        await settleWrites();
      }
      expect(flaky.buffered).toBe(0);
      expect(await metricValue(metrics, 'switchboard_usage_records_dropped_total', { reason: 'write_failed' })).toBe(2);
      expect(await repo.count()).toBe(4);
    });

    it('skips a record whose request id is already stored instead of failing its batch', async () => {
      recorder.record(usage(1));
      await recorder.flush();
      recorder.record(usage(1, { status: 500 }));
      recorder.record(usage(2));
      await recorder.flush();
      expect(await ids()).toEqual(['r-1', 'r-2']);
      expect((await repo.findOneByOrFail({ id: 'r-1' })).status).toBe(200);
    });

    it('writes what is buffered at shutdown, and nothing after', async () => {
      for (let i = 0; i < 3; i++) recorder.record(usage(i));
      await recorder.beforeApplicationShutdown();
      expect(await repo.count()).toBe(3);

      sql.clear();
      recorder.record(usage(9));
      clock.advance(FLUSH_MS * 2);
      await settleWrites();
      expect(sql.writesTo('usage_records')).toEqual([]);
      expect(clock.pendingTimers()).toBe(0);
    });

    it('never throws and never blocks when the database is gone', async () => {
      const broken = await db.connect();
      const brokenRecorder = await start(new TypeOrmUsageRecorder(broken.getRepository(UsageRecordEntity), clock, config(), metrics));
      await broken.destroy();
      expect(() => {
        for (let i = 0; i < 5; i++) brokenRecorder.record(usage(i));
      }).not.toThrow();
      clock.advance(FLUSH_MS);
      await brokenRecorder.whenIdle();
      await expect(brokenRecorder.close()).resolves.toBeUndefined();
      expect(await metricValue(metrics, 'switchboard_usage_records_dropped_total', { reason: 'write_failed' })).toBe(5);
    });
  });

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
