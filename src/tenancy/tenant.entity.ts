import { Column, Entity, PrimaryColumn } from 'typeorm';
import { epochMillis } from '../common/column-transformers';
import type { Priority } from '../common/priority';

/**
 * Row of `tenants`: settings stored through `PUT /admin/tenants/:id`. A row replaces the config
 * file's entry for the same id as a whole (see docs/tenancy.md). Null = not set (no limit / default).
 */
@Entity('tenants')
export class TenantEntity {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  id: string;

  @Column({ type: 'bigint', nullable: true, transformer: epochMillis })
  rpm: number | null;

  @Column({ type: 'bigint', nullable: true, transformer: epochMillis })
  tpm: number | null;

  @Column({ name: 'tokens_per_day', type: 'bigint', nullable: true, transformer: epochMillis })
  tokensPerDay: number | null;

  @Column({ type: 'varchar', length: 16, nullable: true })
  priority: Priority | null;

  @Column({ name: 'max_priority', type: 'varchar', length: 16, nullable: true })
  maxPriority: Priority | null;

  @Column({ name: 'max_queued', type: 'bigint', nullable: true, transformer: epochMillis })
  maxQueued: number | null;

  @Column({ name: 'max_concurrent', type: 'bigint', nullable: true, transformer: epochMillis })
  maxConcurrent: number | null;

  @Column({ name: 'session_tokens', type: 'bigint', nullable: true, transformer: epochMillis })
  sessionTokens: number | null;

  @Column({ name: 'session_time_secs', type: 'bigint', nullable: true, transformer: epochMillis })
  sessionTimeSecs: number | null;

  /** JSON array of model names, stored as text; null = every model. */
  @Column({ type: 'simple-json', nullable: true })
  models: string[] | null;

  /** JSON array of pool (provider) names, stored as text; null = every pool. */
  @Column({ type: 'simple-json', nullable: true })
  pools: string[] | null;

  @Column({ name: 'created_at', type: 'bigint', transformer: epochMillis })
  createdAt: number;

  @Column({ name: 'updated_at', type: 'bigint', transformer: epochMillis })
  updatedAt: number;
}
