import { getNumberFromEnv } from '@opentelemetry/core';
import { BODY_END, OtlpWriter } from './otlp-json';
import type { EndedSpan, SpanSink } from './trace-span';

/** The BatchSpanProcessor settings of the standard `OTEL_BSP_*` variables, with the spec's defaults. */
export interface BatchOptions {
  maxQueueSize: number;
  maxExportBatchSize: number;
  scheduledDelayMs: number;
}

export function batchOptionsFromEnv(): BatchOptions {
  const positive = (name: string, fallback: number) => {
    const n = getNumberFromEnv(name);
    return n !== undefined && n > 0 ? n : fallback;
  };
  const maxQueueSize = positive('OTEL_BSP_MAX_QUEUE_SIZE', 2048);
  return {
    maxQueueSize,
    // The SDK's rule: a batch never exceeds the queue.
    maxExportBatchSize: Math.min(positive('OTEL_BSP_MAX_EXPORT_BATCH_SIZE', 512), maxQueueSize),
    scheduledDelayMs: positive('OTEL_BSP_SCHEDULE_DELAY', 5000),
  };
}

/** Sends one export request's body; rejects when the collector did not take it. */
export interface BatchTransport {
  send(body: Buffer): Promise<void>;
}

/**
 * One export request's body, written as its spans end: UTF-8 bytes outside the JS heap. Queued
 * spans kept as strings (or objects) until their batch left were old-generation garbage for every
 * collection meanwhile; bytes in a buffer cost the collector nothing, and the buffer is reused.
 */
class BatchBody {
  count = 0;
  private readonly writer: OtlpWriter;

  constructor(buffer: Buffer, start: (w: OtlpWriter) => void) {
    this.writer = new OtlpWriter(buffer);
    start(this.writer);
  }

  add(span: EndedSpan): void {
    if (this.count > 0) this.writer.raw(',');
    span.writeJson(this.writer);
    this.count += 1;
  }

  /** The finished body; the buffer is the batcher's again once it is sent. */
  finish(): { body: Buffer; buffer: Buffer } {
    return this.writer.raw(BODY_END).finish();
  }
}

/**
 * The BatchSpanProcessor's behaviour over encoded spans: a full batch is exported at once (after
 * the current I/O callbacks, off the request that ended the span), a partial one after
 * `scheduledDelayMs`; one export at a time; spans beyond `maxQueueSize` are dropped (a collector
 * that cannot keep up must not grow the gateway's memory). A failed export loses its spans, as
 * with the SDK (no retries); the loss is logged at most once a minute.
 */
export class SpanBatcher implements SpanSink {
  /** Batches not yet sent, oldest first; only the last one takes more spans. */
  private readonly batches: BatchBody[] = [];
  private queued = 0;
  /** A sent batch's buffer, for the next batch. */
  private spare: Buffer | undefined;
  private timer: NodeJS.Timeout | undefined;
  private immediate: NodeJS.Immediate | undefined;
  private exporting: Promise<void> | undefined;
  private stopped = false;
  private lost = 0;
  private lastWarning = -Infinity;

  constructor(
    private readonly transport: BatchTransport,
    /** Writes the export body up to its spans (otlp-json writeBodyStart). */
    private readonly bodyStart: (w: OtlpWriter) => void,
    private readonly options: BatchOptions,
    private readonly warn: (message: string) => void,
  ) {}

  ended(span: EndedSpan): void {
    if (this.stopped) return;
    if (this.queued >= this.options.maxQueueSize) return this.lose(1, 'the export queue is full (OTEL_BSP_MAX_QUEUE_SIZE)');
    let batch = this.batches[this.batches.length - 1];
    if (!batch || batch.count >= this.options.maxExportBatchSize) {
      batch = new BatchBody(this.spare ?? Buffer.allocUnsafe(64 * 1024), this.bodyStart);
      this.spare = undefined;
      this.batches.push(batch);
    }
    batch.add(span);
    this.queued += 1;
    if (batch.count >= this.options.maxExportBatchSize) this.exportSoon();
    else this.timer ??= setTimeout(() => this.exportNext(), this.options.scheduledDelayMs).unref();
  }

  /** Exports everything queued (and waits for the export under way). */
  async flush(): Promise<void> {
    while (this.exporting || this.batches.length > 0) {
      this.exportNext();
      await this.exporting;
    }
  }

  /** Flushes, then takes no more spans. */
  async shutdown(): Promise<void> {
    await this.flush();
    this.stopped = true;
    this.cancelTimers();
  }

  private exportSoon(): void {
    if (!this.exporting) this.immediate ??= setImmediate(() => this.exportNext());
  }

  private exportNext(): void {
    this.cancelTimers();
    // The export under way looks at the queue again when it ends.
    const batch = this.exporting ? undefined : this.batches.shift();
    if (!batch) return;
    this.queued -= batch.count;
    const { body, buffer } = batch.finish();
    let answered = false;
    this.exporting = this.transport
      .send(body)
      .then(
        () => {
          answered = true;
        },
        (e: unknown) => this.lose(batch.count, `export failed: ${e instanceof Error ? e.message : String(e)}`),
      )
      .finally(() => {
        this.exporting = undefined;
        // Reused only after a collector's answer: a failed or timed-out send may leave the socket
        // still holding the body's bytes, which the next batch must not overwrite.
        if (answered) this.spare = buffer;
        const next = this.batches[0];
        if (next && next.count >= this.options.maxExportBatchSize) this.exportSoon();
        else if (next && !this.stopped) this.timer ??= setTimeout(() => this.exportNext(), this.options.scheduledDelayMs).unref();
      });
  }

  private lose(count: number, why: string): void {
    this.lost += count;
    const now = Date.now();
    if (now - this.lastWarning < 60_000) return;
    this.lastWarning = now;
    this.warn(`${this.lost} span(s) lost since the last warning; now: ${why}`);
    this.lost = 0;
  }

  private cancelTimers(): void {
    if (this.timer) clearTimeout(this.timer);
    if (this.immediate) clearImmediate(this.immediate);
    this.timer = undefined;
    this.immediate = undefined;
  }
}
