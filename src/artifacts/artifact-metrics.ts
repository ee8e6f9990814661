import { Injectable } from '@nestjs/common';
import { Counter, Gauge } from 'prom-client';
import { MetricsService } from '../observability/metrics.service';

/** Why job artifacts were lost: the write-behind buffer was full, or their batch kept failing. */
export type ArtifactDropReason = 'buffer_full' | 'write_failed';

/** The artifact registry's metrics, in the gateway's registry beside the others. */
@Injectable()
export class ArtifactMetrics {
  private readonly written: Counter;
  private readonly dropped: Counter<'reason'>;
  private readonly buffered: Gauge;
  private bufferedBytes: () => number = () => 0;

  constructor(metrics: MetricsService) {
    const registers = [metrics.registry];
    this.written = new Counter({ name: 'switchboard_artifacts_written_total', help: 'Job artifacts written to the database.', registers });
    this.dropped = new Counter({
      name: 'switchboard_artifacts_dropped_total',
      help: 'Job artifacts lost: buffer_full (the database fell behind, the oldest were dropped) or write_failed (their batch failed repeatedly).',
      labelNames: ['reason'],
      registers,
    });
    for (const reason of ['buffer_full', 'write_failed'] as const) this.dropped.inc({ reason }, 0);
    this.buffered = new Gauge({
      name: 'switchboard_artifacts_buffered_bytes',
      help: 'Bytes of job artifacts waiting in memory to be written.',
      registers,
      collect: () => this.buffered.set(this.bufferedBytes()),
    });
  }

  collectBufferedBytesWith(read: () => number): void {
    this.bufferedBytes = read;
  }

  artifactsWritten(count: number): void {
    this.written.inc(count);
  }

  artifactsDropped(reason: ArtifactDropReason, count: number): void {
    this.dropped.inc({ reason }, count);
  }
}
