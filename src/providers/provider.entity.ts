import { Column, Entity, PrimaryColumn } from 'typeorm';
import { epochMillis } from '../common/column-transformers';
import type { ModelCapabilities } from '../protocol';

/** Row of `providers` (see migrations/ and docs/persistence.md). */
@Entity('providers')
export class ProviderEntity {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  name: string;

  @Column({ name: 'secret_hash', type: 'varchar', length: 255, nullable: true })
  secretHash: string | null;

  @Column({ type: 'boolean' })
  enabled: boolean;

  @Column({ name: 'max_queue_len', type: 'integer' })
  maxQueueLen: number;

  @Column({ name: 'queue_timeout_ms', type: 'bigint', transformer: epochMillis })
  queueTimeoutMs: number;

  @Column({ name: 'request_timeout_ms', type: 'bigint', transformer: epochMillis })
  requestTimeoutMs: number;

  /** The pool's own first-byte watchdog timeout; null = `routing.first_byte_timeout_secs`. */
  @Column({ name: 'first_byte_timeout_ms', type: 'bigint', nullable: true, transformer: epochMillis })
  firstByteTimeoutMs: number | null;

  @Column({ name: 'max_models_per_worker', type: 'integer' })
  maxModelsPerWorker: number;

  /** JSON array of model names, stored as text. */
  @Column({ type: 'simple-json' })
  models: string[];

  @Column({ type: 'integer', nullable: true })
  priority: number | null;

  /** JSON object model → capabilities, stored as text. */
  @Column({ type: 'simple-json' })
  capabilities: Record<string, ModelCapabilities>;

  /** JSON object alias → model (pool-scoped aliases), stored as text. */
  @Column({ type: 'simple-json' })
  aliases: Record<string, string>;

  /** GPU-time chargeback price (per GPU-hour); null = unpriced. */
  @Column({ name: 'cost_per_gpu_hour', type: 'double precision', nullable: true })
  costPerGpuHour: number | null;

  /** GPUs behind each worker of the pool; null = 1. */
  @Column({ name: 'gpus_per_worker', type: 'double precision', nullable: true })
  gpusPerWorker: number | null;

  /** `auto`/`never`: whether requests may reach its workers by translation; null = `routing.translation`. */
  @Column({ name: 'translation', type: 'varchar', length: 16, nullable: true })
  translation: string | null;

  @Column({ type: 'varchar', length: 16 })
  source: 'config' | 'admin';

  @Column({ name: 'created_at', type: 'bigint', transformer: epochMillis })
  createdAt: number;

  @Column({ name: 'updated_at', type: 'bigint', transformer: epochMillis })
  updatedAt: number;
}
