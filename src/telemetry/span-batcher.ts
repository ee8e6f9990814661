import { getNumberFromEnv } from '@opentelemetry/core';
import { BODY_END } from './otlp-json';
import type { SpanSink } from './trace-span';

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
  send(body: string): Promise<void>;
}

/**
 * The BatchSpanProcessor's behaviour over encoded spans: a full batch is exported at once (after
 * the current I/O callbacks, off the request that ended the span), a partial one after
 * `scheduledDelayMs`; one export at a time; spans beyond `maxQueueSize` are dropped (a collector
 * that cannot keep up must not grow the gateway's memory). A failed export loses its spans, as
 * with the SDK (no retries); the loss is logged at most once a minute.
 */
export class SpanBatcher implements SpanSink {
  private queue: string[] = [];
  private timer: NodeJS.Timeout | undefined;
  private immediate: NodeJS.Immediate | undefined;
  private exporting: Promise<void> | undefined;
  private stopped = false;
  private lost = 0;
  private lastWarning = -Infinity;

  constructor(
    private readonly transport: BatchTransport,
    /** The export body up to its spans (otlp-json bodyStart). */
    private readonly bodyStart: string,
    private readonly options: BatchOptions,
    private readonly warn: (message: string) => void,
  ) {}

  ended(encoded: string): void {
    if (this.stopped) return;
    if (this.queue.length >= this.options.maxQueueSize) return this.lose(1, 'the export queue is full (OTEL_BSP_MAX_QUEUE_SIZE)');
    this.queue.push(encoded);
    if (this.queue.length >= this.options.maxExportBatchSize) this.exportSoon();
    else this.timer ??= setTimeout(() => this.exportNext(), this.options.scheduledDelayMs).unref();
  }

  /** Exports everything queued (and waits for the export under way). */
  async flush(): Promise<void> {
    while (this.exporting || this.queue.length > 0) {
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
    if (this.exporting || this.queue.length === 0) return;
    const spans = this.queue.splice(0, this.options.maxExportBatchSize);
    this.exporting = this.transport
      .send(this.bodyStart + spans.join(',') + BODY_END)
      .catch((e: unknown) => this.lose(spans.length, `export failed: ${e instanceof Error ? e.message : String(e)}`))
      .finally(() => {
        this.exporting = undefined;
        if (this.queue.length >= this.options.maxExportBatchSize) this.exportSoon();
        else if (this.queue.length > 0 && !this.stopped) this.timer ??= setTimeout(() => this.exportNext(), this.options.scheduledDelayMs).unref();
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
