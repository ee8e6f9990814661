import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { epochMillis } from '../common/column-transformers';

/**
 * Row of `usage_records`: one per finished client request (see UsageRecord). Counts, never
 * content: no prompt, output or header is stored.
 */
@Entity('usage_records')
@Index('IDX_usage_records_received_at', ['receivedAt'])
@Index('IDX_usage_records_tenant_received_at', ['tenant', 'receivedAt'])
@Index('IDX_usage_records_key_received_at', ['keyId', 'receivedAt'])
export class UsageRecordEntity {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  id: string;

  @Column({ name: 'received_at', type: 'bigint', transformer: epochMillis })
  receivedAt: number;

  /** UTC day of received_at, `YYYY-MM-DD`, written with the row (portable GROUP BY day). */
  @Column({ type: 'varchar', length: 10 })
  day: string;

  @Column({ type: 'varchar', length: 64 })
  tenant: string;

  @Column({ name: 'key_id', type: 'varchar', length: 64, nullable: true })
  keyId: string | null;

  @Column({ name: 'requested_model', type: 'varchar', length: 255 })
  requestedModel: string;

  @Column({ name: 'served_model', type: 'varchar', length: 255, nullable: true })
  servedModel: string | null;

  @Column({ type: 'varchar', length: 64, nullable: true })
  provider: string | null;

  @Column({ name: 'worker_id', type: 'varchar', length: 128, nullable: true })
  workerId: string | null;

  @Column({ name: 'worker_name', type: 'varchar', length: 255, nullable: true })
  workerName: string | null;

  @Column({ type: 'varchar', length: 64 })
  endpoint: string;

  @Column({ type: 'integer' })
  status: number;

  @Column({ name: 'error_code', type: 'varchar', length: 64, nullable: true })
  errorCode: string | null;

  @Column({ name: 'prompt_tokens', type: 'integer', nullable: true })
  promptTokens: number | null;

  @Column({ name: 'completion_tokens', type: 'integer', nullable: true })
  completionTokens: number | null;

  @Column({ name: 'queue_wait_ms', type: 'integer' })
  queueWaitMs: number;

  @Column({ name: 'ttfb_ms', type: 'integer', nullable: true })
  ttfbMs: number | null;

  @Column({ name: 'duration_ms', type: 'integer' })
  durationMs: number;

  /** Placement to completion on the worker (the slot it held); null when no worker took it. */
  @Column({ name: 'worker_ms', type: 'integer', nullable: true })
  workerMs: number | null;

  /** The backend's own time, where the worker reports it. */
  @Column({ name: 'backend_ms', type: 'integer', nullable: true })
  backendMs: number | null;

  /** GPU milliseconds: worker_ms / max_concurrent × gpus_per_worker (fractional). */
  @Column({ name: 'gpu_ms', type: 'double precision', nullable: true })
  gpuMs: number | null;

  /** gpu_ms at the pool's cost_per_gpu_hour when recorded; null when the pool sets none. */
  @Column({ type: 'double precision', nullable: true })
  cost: number | null;
}
