import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { epochMillis } from '../common/column-transformers';

export type WorkerRecordState = 'online' | 'offline';

/** Row of `worker_records`: one per worker connection, kept after disconnect until retention expires. */
@Entity('worker_records')
@Index('IDX_worker_records_state_heartbeat', ['state', 'lastHeartbeatAt'])
@Index('IDX_worker_records_provider', ['provider'])
export class WorkerRecordEntity {
  @PrimaryColumn({ type: 'varchar', length: 128 })
  id: string;

  @Column({ type: 'varchar', length: 64 })
  provider: string;

  @Column({ type: 'varchar', length: 255 })
  name: string;

  /** JSON array of model names (`*` for a wildcard worker), stored as text. */
  @Column({ type: 'simple-json' })
  models: string[];

  @Column({ name: 'max_concurrent', type: 'integer' })
  maxConcurrent: number;

  @Column({ name: 'gateway_instance_id', type: 'varchar', length: 128 })
  gatewayInstanceId: string;

  @Column({ name: 'remote_address', type: 'varchar', length: 128 })
  remoteAddress: string;

  @Column({ name: 'connected_at', type: 'bigint', transformer: epochMillis })
  connectedAt: number;

  @Column({ name: 'last_heartbeat_at', type: 'bigint', transformer: epochMillis })
  lastHeartbeatAt: number;

  @Column({ name: 'disconnected_at', type: 'bigint', nullable: true, transformer: epochMillis })
  disconnectedAt: number | null;

  @Column({ type: 'varchar', length: 16 })
  state: WorkerRecordState;
}
