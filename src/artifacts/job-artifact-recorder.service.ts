import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config';
import { CLOCK, Clock, TimerHandle } from '../common/clock';
import { ArtifactMetrics } from './artifact-metrics';
import { ArtifactWrite } from './artifact-record';
import { ArtifactStore } from './artifact-store';
import { ArtifactsConfig } from '../config/sections/artifacts';
import { buildJobArtifact } from './job-artifact';
import { JobArtifactInput, JobArtifacts } from './job-artifacts.port';

/** A failed batch is retried on the next flushes; after this many failed attempts it is dropped. */
export const MAX_WRITE_ATTEMPTS = 3;
/** One write (one transaction) takes at most this many artifacts, or this many bytes (at least one artifact). */
export const BATCH_RECORDS = 100;
export const BATCH_BYTES = 8 * 1024 * 1024;

interface Pending {
  write: ArtifactWrite;
  bytes: number;
  attempts: number;
}

const keyOf = (tenant: string, id: string) => `${tenant}\u0000${id}`;

/**
 * The `JobArtifacts` port: a finished task's artifact is built and its id answered at once;
 * writing happens behind. `recordJob` only adds to an in-memory buffer bounded in bytes
 * (`ARTIFACTS_BUFFER_BYTES`; past it the oldest waiting artifacts are dropped and counted). Every
 * `ARTIFACTS_FLUSH_INTERVAL_SECS`, or as soon as a batch is full, one transaction writes up to
 * BATCH_RECORDS artifacts; one write runs at a time. A failed batch goes back to the front and is
 * retried on the next periods, and is dropped after MAX_WRITE_ATTEMPTS failures. Until an
 * artifact is written, `pending` still finds it, so its id can be read back at once. At shutdown
 * what is buffered is written.
 */
@Injectable()
export class JobArtifactRecorder implements JobArtifacts, OnModuleInit, BeforeApplicationShutdown {
  private readonly log = new Logger('Artifacts');
  private readonly config: ArtifactsConfig;
  /** Waiting, oldest first (a Map keeps insertion order). */
  private waiting = new Map<string, Pending>();
  /** The batch being written: still readable, never dropped. */
  private inFlight = new Map<string, Pending>();
  private bufferedBytes = 0;
  private writing: Promise<void> | undefined;
  private flushTimer: TimerHandle | undefined;
  private soonTimer: TimerHandle | undefined;
  /** Set after a failed write: wait for the next period instead of writing again at once. */
  private failing = false;
  private closed = false;
  private droppedSinceWarning = 0;

  constructor(
    private readonly store: ArtifactStore,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(APP_CONFIG) appConfig: AppConfig,
    private readonly metrics: ArtifactMetrics,
  ) {
    this.config = appConfig.artifacts;
    metrics.collectBufferedBytesWith(() => this.bufferedBytes);
  }

  onModuleInit(): void {
    this.flushTimer = this.clock.setInterval(() => this.flushSoon(true), this.config.flushIntervalMs);
  }

  /** Runs after the feature modules' hooks (the module is global), so artifacts of tasks ended by the drain are written. */
  async beforeApplicationShutdown(): Promise<void> {
    await this.close();
  }

  recordJob(input: JobArtifactInput): string {
    let write: ArtifactWrite;
    try {
      write = buildJobArtifact(input, this.config);
    } catch (e) {
      this.log.warn(`artifact of task ${String(input?.jobId)} not recorded: ${(e as Error).message}`);
      return '';
    }
    const { tenant, id } = write.record;
    if (this.closed) {
      this.log.warn(`shutting down: artifact ${id} of task ${input.jobId} not written`);
      return id;
    }
    const key = keyOf(tenant, id);
    // The same artifact twice (same content): once is enough.
    if (this.waiting.has(key) || this.inFlight.has(key)) return id;
    const bytes = write.record.size + (write.transcript ? Buffer.byteLength(write.transcript.text, 'utf8') : 0) + 1024;
    this.waiting.set(key, { write, bytes, attempts: 0 });
    this.bufferedBytes += bytes;
    this.makeRoom();
    if (!this.failing && this.batchIsFull()) this.flushSoon(false);
    return id;
  }

  /** A recorded artifact not written yet (with its transcript), if any. */
  pending(tenant: string, id: string): ArtifactWrite | undefined {
    const key = keyOf(tenant, id);
    return (this.waiting.get(key) ?? this.inFlight.get(key))?.write;
  }

  /** Artifacts waiting in memory (being written included). */
  get buffered(): number {
    return this.waiting.size + this.inFlight.size;
  }

  /** Resolves once the write in progress, if any, has finished; for tests. */
  async whenIdle(): Promise<void> {
    while (this.writing) await this.writing;
  }

  /** Writes everything buffered now (several batches if needed); resolves when done. Never rejects. */
  async flush(): Promise<void> {
    await this.writing;
    this.failing = false;
    while (this.waiting.size > 0) {
      const before = this.waiting.size;
      await this.writeOnce();
      // A failing database: keep what is left for the next attempt rather than spin.
      if (this.failing || this.waiting.size >= before) break;
    }
  }

  /** Stops the timer, writes what is buffered (retrying failed batches up to their limit), ignores artifacts from then on. */
  async close(): Promise<void> {
    if (this.flushTimer !== undefined) this.clock.clearInterval(this.flushTimer);
    if (this.soonTimer !== undefined) this.clock.clearTimeout(this.soonTimer);
    this.flushTimer = this.soonTimer = undefined;
    if (this.closed) return;
    for (let attempt = 0; attempt < MAX_WRITE_ATTEMPTS && this.waiting.size > 0; attempt++) await this.flush();
    await this.writing;
    this.closed = true;
    const lost = this.waiting.size;
    if (lost > 0) {
      this.log.warn(`shutting down: ${lost} artifact(s) could not be written`);
      this.metrics.artifactsDropped('write_failed', lost);
      this.waiting.clear();
      this.bufferedBytes = 0;
    }
  }

  private batchIsFull(): boolean {
    if (this.waiting.size >= BATCH_RECORDS) return true;
    let bytes = 0;
    for (const p of this.waiting.values()) if ((bytes += p.bytes) >= BATCH_BYTES) return true;
    return false;
  }

  /** Drops the oldest waiting artifacts while the buffer is over its bound (the newest always stays). */
  private makeRoom(): void {
    let dropped = 0;
    for (const [key, p] of this.waiting) {
      if (this.bufferedBytes <= this.config.bufferBytes || this.waiting.size === 1) break;
      this.waiting.delete(key);
      this.bufferedBytes -= p.bytes;
      dropped++;
    }
    if (dropped === 0) return;
    this.metrics.artifactsDropped('buffer_full', dropped);
    if (this.droppedSinceWarning === 0) {
      this.log.warn(`artifact buffer full (${this.config.bufferBytes} bytes): the database is behind, dropping the oldest job artifacts`);
    }
    this.droppedSinceWarning += dropped;
  }

  /** Starts a write off the caller's stack, on the next tick of the clock. Periodic flushes also retry after a failure. */
  private flushSoon(periodic: boolean): void {
    if (this.closed || this.waiting.size === 0) return;
    if (periodic) this.failing = false;
    if (this.writing || this.soonTimer !== undefined) return;
    this.soonTimer = this.clock.setTimeout(() => {
      this.soonTimer = undefined;
      void this.writeOnce().then(() => {
        if (!this.failing && this.batchIsFull()) this.flushSoon(false);
      });
    }, 0);
  }

  /** One transaction of up to one batch. Never rejects. */
  private writeOnce(): Promise<void> {
    if (this.writing) return this.writing;
    let bytes = 0;
    for (const [key, p] of this.waiting) {
      if (this.inFlight.size >= BATCH_RECORDS || (this.inFlight.size > 0 && bytes + p.bytes > BATCH_BYTES)) break;
      this.waiting.delete(key);
      this.inFlight.set(key, p);
      bytes += p.bytes;
    }
    if (this.inFlight.size === 0) return Promise.resolve();
    const batch = this.inFlight;
    this.writing = this.store
      .saveMany([...batch.values()].map((p) => p.write))
      .then(
        () => {
          this.failing = false;
          this.droppedSinceWarning = 0;
          this.bufferedBytes -= bytes;
          this.metrics.artifactsWritten(batch.size);
        },
        (e: unknown) => this.failed(batch, bytes, e),
      )
      .finally(() => {
        this.inFlight = new Map();
        this.writing = undefined;
      });
    return this.writing;
  }

  private failed(batch: Map<string, Pending>, bytes: number, e: unknown): void {
    this.failing = true;
    const retry = [...batch].filter(([, p]) => ++p.attempts < MAX_WRITE_ATTEMPTS);
    const givenUp = batch.size - retry.length;
    this.log.warn(
      `writing ${batch.size} artifact(s) failed: ${e instanceof Error ? e.message : String(e)}${givenUp ? `; ${givenUp} dropped after ${MAX_WRITE_ATTEMPTS} attempts` : ''}`,
    );
    if (givenUp > 0) this.metrics.artifactsDropped('write_failed', givenUp);
    this.bufferedBytes -= bytes - retry.reduce((sum, [, p]) => sum + p.bytes, 0);
    // Back in front, as if never taken; the bound applies again.
    this.waiting = new Map([...retry, ...this.waiting]);
    this.makeRoom();
  }
}
