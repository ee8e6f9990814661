import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { APP_CONFIG, AppConfig } from '../config';
import { CLOCK, Clock, TimerHandle } from '../common/clock';
import { MetricsService } from '../observability/metrics.service';
import { RingBuffer } from './ring-buffer';
import { UsageConfig } from '../config/sections/usage';
import { UsageRecord } from './usage-record';
import { UsageRecordEntity } from './usage-record.entity';
import { UsageRecorder } from './usage-recorder.port';

/** A failed batch is retried on the next flushes; after this many failed attempts it is dropped. */
export const MAX_WRITE_ATTEMPTS = 3;

interface Pending {
  row: UsageRecord;
  attempts: number;
}

/** The INSERT's column readers and its statement text per row count (built once, from the entity metadata). */
interface InsertShape {
  values: Array<(row: UsageRecordEntity) => unknown>;
  statement: (rows: number) => string;
  statements: Map<number, string>;
}

/**
 * Usage records written behind the request path. `record` only appends to a bounded in-memory
 * buffer. Every `flushIntervalMs`, or as soon as `batchSize` records wait, up to `batchSize` of
 * them are written in **one** multi-row INSERT; one write runs at a time.
 *
 * Bounded: the buffer holds at most `bufferSize` records. When the database is slow or down, the
 * oldest records are dropped to make room and counted in
 * `switchboard_usage_records_dropped_total{reason="buffer_full"}`. A batch that fails goes back to
 * the front of the buffer and is retried on the next period; after MAX_WRITE_ATTEMPTS failures it
 * is dropped (`reason="write_failed"`), so one bad batch cannot block the rest forever.
 */
@Injectable()
export class TypeOrmUsageRecorder extends UsageRecorder implements OnModuleInit, BeforeApplicationShutdown {
  private readonly log = new Logger('UsageRecords');
  private readonly config: UsageConfig;
  private readonly buffer: RingBuffer<Pending>;
  private flushTimer: TimerHandle | undefined;
  private soonTimer: TimerHandle | undefined;
  /** The write in progress, if any: writes never overlap. */
  private writing: Promise<void> | undefined;
  /** Set after a failed write: wait for the next period instead of writing again at once. */
  private failing = false;
  private closed = false;
  private droppedSinceWarning = 0;

  constructor(
    @InjectRepository(UsageRecordEntity) private readonly repo: Repository<UsageRecordEntity>,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(APP_CONFIG) appConfig: AppConfig,
    private readonly metrics: MetricsService,
  ) {
    super();
    this.config = appConfig.usage;
    this.buffer = new RingBuffer(this.config.bufferSize);
    metrics.usage.collectBufferWith(() => this.buffer.size);
  }

  onModuleInit(): void {
    this.flushTimer = this.clock.setInterval(() => this.flushSoon(true), this.config.flushIntervalMs);
  }

  /** Runs after the feature modules' hooks (the module is global), so records of drained requests are written. */
  async beforeApplicationShutdown(): Promise<void> {
    await this.close();
  }

  record(entry: UsageRecord): void {
    if (this.closed) {
      this.log.debug(`shutting down: usage record ${entry.id} not written`);
      return;
    }
    try {
      if (this.buffer.push({ row: entry, attempts: 0 })) this.dropped('buffer_full', 1);
      if (this.buffer.size >= this.config.batchSize && !this.failing) this.flushSoon(false);
    } catch (e) {
      this.log.warn(`recording usage failed: ${(e as Error).message}`);
    }
  }

  /** Records waiting in memory. */
  get buffered(): number {
    return this.buffer.size;
  }

  /** Writes everything buffered now (several INSERTs if needed); resolves when done. Never rejects. */
  async flush(): Promise<void> {
    await this.writing;
    this.failing = false;
    while (this.buffer.size > 0) {
      const before = this.buffer.size;
      await this.writeOnce();
      // A failing database: keep what is left for the next attempt rather than spin.
      if (this.failing || this.buffer.size >= before) break;
    }
  }

  /** Resolves once the write in progress, if any, has finished; for tests. */
  async whenIdle(): Promise<void> {
    while (this.writing) await this.writing;
  }

  /** Stops the timer, writes what is buffered (retrying failed batches up to their limit), ignores records from then on. */
  async close(): Promise<void> {
    if (this.flushTimer !== undefined) this.clock.clearInterval(this.flushTimer);
    if (this.soonTimer !== undefined) this.clock.clearTimeout(this.soonTimer);
    this.flushTimer = this.soonTimer = undefined;
    if (this.closed) return;
    for (let attempt = 0; attempt < MAX_WRITE_ATTEMPTS && this.buffer.size > 0; attempt++) await this.flush();
    this.closed = true;
    const lost = this.buffer.take(this.buffer.size).length;
    if (lost > 0) {
      this.log.warn(`shutting down: ${lost} usage record(s) could not be written`);
      this.metrics.usage.recordsDropped('write_failed', lost);
    }
  }

  /**
   * Starts a write off the request path: on the next tick of the clock, not inside the caller's
   * stack. `periodic` flushes also retry after a failure; size-triggered ones wait for those.
   */
  private flushSoon(periodic: boolean): void {
    if (this.closed || this.buffer.size === 0) return;
    if (periodic) this.failing = false;
    if (this.writing || this.soonTimer !== undefined) return;
    this.soonTimer = this.clock.setTimeout(() => {
      this.soonTimer = undefined;
      void this.writeOnce().then(() => {
        if (!this.failing && this.buffer.size >= this.config.batchSize) this.flushSoon(false);
      });
    }, 0);
  }

  /** One INSERT of up to batchSize buffered records. Never rejects. */
  private writeOnce(): Promise<void> {
    if (this.writing) return this.writing;
    const batch = this.buffer.take(this.config.batchSize);
    if (batch.length === 0) return Promise.resolve();
    this.writing = this.insert(batch.map((p) => p.row))
      .then(
        () => {
          this.failing = false;
          this.droppedSinceWarning = 0;
          this.metrics.usage.recordsWritten(batch.length);
        },
        (e: unknown) => this.failed(batch, e),
      )
      .finally(() => {
        this.writing = undefined;
      });
    return this.writing;
  }

  /**
   * One multi-row INSERT; a row already present (same request id) is skipped, not an error.
   * The statement is built here rather than by TypeORM's query builder, whose parameter
   * bookkeeping costs more CPU than the rows themselves at hundreds of rows per batch (the flush
   * runs on the gateway's event loop). Column names and the table come from the entity metadata;
   * the statement text is kept per row count (full batches all share one, and the driver's
   * prepared-statement cache finds it without building it again).
   */
  protected async insert(rows: UsageRecord[]): Promise<void> {
    if (rows.length === 0) return;
    const shape = (this.shape ??= this.insertShape());
    const params = insertParams(shape, rows);
    let sql = shape.statements.get(rows.length);
    if (sql === undefined) {
      sql = shape.statement(rows.length);
      // Bounded: row counts are 1..batchSize; a few sizes recur (full batches, the periodic remainder).
      if (shape.statements.size < 64) shape.statements.set(rows.length, sql);
    }
    await this.repo.manager.query(sql, params);
  }

  private shape: InsertShape | undefined;

  private insertShape(): InsertShape {
    const meta = this.repo.metadata;
    const driver = this.repo.manager.connection.driver;
    const positional = driver.options.type === 'postgres';
    const columns = meta.columns;
    const table = meta.tablePath
      .split('.')
      .map((part) => driver.escape(part))
      .join('.');
    const names = columns.map((c) => driver.escape(c.databaseName)).join(', ');
    const key = meta.primaryColumns.map((c) => driver.escape(c.databaseName)).join(', ');
    // A plain column's value is its property (what getEntityValue returns for it, without a
    // transformer); embedded or relation columns keep TypeORM's own lookup.
    const values = columns.map((c): ((row: UsageRecordEntity) => unknown) => {
      if (c.embeddedMetadata || c.relationMetadata || c.referencedColumn) return (row) => c.getEntityValue(row);
      const property = c.propertyName as keyof UsageRecordEntity;
      return (row) => row[property];
    });
    const width = columns.length;
    const statement = (count: number): string => {
      const tuples: string[] = [];
      for (let r = 0; r < count; r++) {
        const marks: string[] = [];
        for (let c = 1; c <= width; c++) marks.push(positional ? `$${r * width + c}` : '?');
        tuples.push(`(${marks.join(', ')})`);
      }
      return `INSERT INTO ${table} (${names}) VALUES ${tuples.join(', ')} ON CONFLICT (${key}) DO NOTHING`;
    };
    return { values, statement, statements: new Map() };
  }

  private failed(batch: Pending[], e: unknown): void {
    this.failing = true;
    const message = e instanceof Error ? e.message : String(e);
    const retry = batch.filter((p) => ++p.attempts < MAX_WRITE_ATTEMPTS);
    const givenUp = batch.length - retry.length;
    this.log.warn(`writing ${batch.length} usage record(s) failed: ${message}${givenUp ? `; ${givenUp} dropped after ${MAX_WRITE_ATTEMPTS} attempts` : ''}`);
    if (givenUp > 0) this.metrics.usage.recordsDropped('write_failed', givenUp);
    const noRoom = this.buffer.putBack(retry);
    if (noRoom > 0) this.dropped('buffer_full', noRoom);
  }

  private dropped(reason: 'buffer_full', count: number): void {
    this.metrics.usage.recordsDropped(reason, count);
    if (this.droppedSinceWarning === 0) {
      this.log.warn(`usage buffer full (${this.config.bufferSize} records): the database is behind, dropping the oldest records`);
    }
    this.droppedSinceWarning += count;
  }
}

/**
 * The INSERT's parameters, row by row. Kept out of the async `insert`: V8 optimised that function
 * on-stack in this loop and threw the code away again at its `await`, on every flush.
 */
function insertParams(shape: InsertShape, rows: UsageRecord[]): unknown[] {
  const params: unknown[] = new Array(rows.length * shape.values.length);
  let i = 0;
  for (const row of rows) {
    for (const value of shape.values) {
      const v = value(row as unknown as UsageRecordEntity);
      params[i++] = v === undefined ? null : v;
    }
  }
  return params;
}
