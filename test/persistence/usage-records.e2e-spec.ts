import { Repository } from 'typeorm';
import { AppConfig } from '../../src/config';
import { MetricsService } from '../../src/observability/metrics.service';
import { UsageConfig } from '../../src/config/sections/usage';
import { UsageRecord } from '../../src/usage/usage-record';
import { UsageRecordEntity } from '../../src/usage/usage-record.entity';
import { MAX_WRITE_ATTEMPTS, TypeOrmUsageRecorder } from '../../src/usage/usage-recorder.service';
import { parsePrometheusText } from '../observability/prometheus-text';
import { FakeClock } from '../support/fake-clock';
import { RecordingLogger } from './support/recording-logger';
import { TestDatabase } from './support/test-database';
import { closeUsageDatabase, FLUSH_MS, openUsageDatabase, recordIds, resetUsageRecords, usageRecord, usageTestConfig } from './support/usage-fixture';

// Reading records back (UsageAggregates) and retention are in usage-aggregates.e2e-spec.ts.

describe('usage records', () => {
  let db: TestDatabase;
  let repo: Repository<UsageRecordEntity>;
  const sql = new RecordingLogger();
  let clock: FakeClock;

  beforeAll(async () => {
    ({ db, repo } = await openUsageDatabase(sql));
  });

  afterAll(() => closeUsageDatabase(db));

  beforeEach(async () => {
    clock = await resetUsageRecords(repo, sql);
  });

  const config = (usage: Partial<UsageConfig> = {}): AppConfig => usageTestConfig(db, usage);
  const usage = (n: number, overrides: Partial<UsageRecord> = {}): UsageRecord => usageRecord(clock, n, overrides);
  const ids = (): Promise<string[]> => recordIds(repo);

  async function metricValue(metrics: MetricsService, family: string, labels: Record<string, string> = {}): Promise<number | undefined> {
    const f = parsePrometheusText(await metrics.registry.metrics()).get(family);
    return f?.samples.find((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
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
});
