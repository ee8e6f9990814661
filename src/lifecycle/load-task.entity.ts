import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { epochMillis } from '../common/column-transformers';
import type { LoadOptions, TaskPart, TaskStatus } from './lifecycle-task';

/**
 * Row of `lifecycle_tasks`: a model load (`POST /v1/models/load`), so `GET /v1/models/load/:taskId`
 * answers after a restart and on every replica. Kept for `lifecycle.task_retention_hours` after
 * its last change.
 */
@Entity('lifecycle_tasks')
@Index('IDX_lifecycle_tasks_updated_at', ['updatedAt'])
@Index('IDX_lifecycle_tasks_status_instance', ['status', 'gatewayInstanceId'])
export class LoadTaskEntity {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  id: string;

  @Column({ type: 'varchar', length: 16 })
  operation: string;

  @Column({ name: 'model_id', type: 'varchar', length: 255 })
  modelId: string;

  @Column({ type: 'varchar', length: 16 })
  status: TaskStatus;

  @Column({ type: 'varchar', length: 1024, nullable: true })
  error: string | null;

  /** quantization, maxContextLength, gpuMemoryBudgetMB, evictModel (JSON text). */
  @Column({ type: 'simple-json' })
  options: LoadOptions;

  /** Each worker's part: status, progress, figures, error (JSON text). */
  @Column({ type: 'simple-json' })
  workers: TaskPart[];

  /** The gateway that runs it: at its next boot, its unfinished tasks are failed. */
  @Column({ name: 'gateway_instance_id', type: 'varchar', length: 128 })
  gatewayInstanceId: string;

  @Column({ name: 'created_at', type: 'bigint', transformer: epochMillis })
  createdAt: number;

  @Column({ name: 'updated_at', type: 'bigint', transformer: epochMillis })
  updatedAt: number;

  @Column({ name: 'finished_at', type: 'bigint', nullable: true, transformer: epochMillis })
  finishedAt: number | null;
}
