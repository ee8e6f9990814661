import { Column, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';
import { epochMillis } from '../common/column-transformers';
import type { AuditOutcome, AuditTarget } from './audit-log';

/*
 * Since issue 21 the table holds every admin action, not only lifecycle operations: `action` names
 * it, and the actor, role, source address, correlation id, target id and summary say who did what
 * to which (migration 1765300000000-admin-audit.ts). The table keeps its name.
 */

/**
 * Row of `lifecycle_audit`: one lifecycle request, accepted or refused, and one more when an
 * accepted operation ends. Append-only (deleted by retention only, audit-retention.ts). Never a token: the admin token only as a fingerprint,
 * the op token only as the signers and nonce it claimed.
 */
@Entity('lifecycle_audit')
@Index('IDX_lifecycle_audit_at', ['at'])
@Index('IDX_lifecycle_audit_operation_at', ['operation', 'at'])
@Index('IDX_lifecycle_audit_action_at', ['action', 'at'])
@Index('IDX_lifecycle_audit_actor_at', ['actorSubject', 'at'])
@Index('IDX_lifecycle_audit_target_at', ['targetId', 'at'])
export class AuditEntryEntity {
  @PrimaryGeneratedColumn({ type: 'integer' })
  id: number;

  @Column({ type: 'bigint', transformer: epochMillis })
  at: number;

  @Column({ type: 'varchar', length: 16 })
  operation: string;

  @Column({ name: 'model_id', type: 'varchar', length: 255, nullable: true })
  modelId: string | null;

  @Column({ type: 'varchar', length: 16, nullable: true })
  scope: string | null;

  /** What the request targeted: `{pool?, workerId?, replicas?, tenantId?, tag?}` as JSON text. */
  @Column({ type: 'simple-json' })
  target: AuditTarget;

  /** Ids of the workers the operation was sent to (JSON text). */
  @Column({ type: 'simple-json' })
  workers: string[];

  /** The signers the op token named (verified only when the outcome is not `refused`). */
  @Column({ type: 'simple-json', nullable: true })
  signers: string[] | null;

  @Column({ type: 'varchar', length: 128, nullable: true })
  nonce: string | null;

  /** `sha256:` and the first 12 hex digits of the admin token's SHA-256. */
  @Column({ name: 'admin_identity', type: 'varchar', length: 64, nullable: true })
  adminIdentity: string | null;

  @Column({ type: 'varchar', length: 16 })
  outcome: AuditOutcome;

  /** Refused: the status answered; accepted: 202; the end of an operation: 200 (completed) or 502 (failed). */
  @Column({ type: 'integer' })
  status: number;

  @Column({ name: 'error_code', type: 'varchar', length: 64, nullable: true })
  errorCode: string | null;

  @Column({ type: 'varchar', length: 1024, nullable: true })
  error: string | null;

  @Column({ name: 'task_id', type: 'varchar', length: 64, nullable: true })
  taskId: string | null;

  /** `keys.create`, `lifecycle.model-load`… (rows from before the column: backfilled by the migration). */
  @Column({ type: 'varchar', length: 64, nullable: true })
  action: string | null;

  @Column({ name: 'actor_kind', type: 'varchar', length: 16, nullable: true })
  actorKind: string | null;

  @Column({ name: 'actor_subject', type: 'varchar', length: 255, nullable: true })
  actorSubject: string | null;

  @Column({ name: 'actor_name', type: 'varchar', length: 255, nullable: true })
  actorName: string | null;

  @Column({ type: 'varchar', length: 16, nullable: true })
  role: string | null;

  @Column({ name: 'source_address', type: 'varchar', length: 64, nullable: true })
  sourceAddress: string | null;

  @Column({ name: 'correlation_id', type: 'varchar', length: 128, nullable: true })
  correlationId: string | null;

  @Column({ name: 'target_id', type: 'varchar', length: 255, nullable: true })
  targetId: string | null;

  /** What changed, as JSON text; never a secret (redacted before it gets here). */
  @Column({ type: 'simple-json', nullable: true })
  summary: Record<string, unknown> | null;
}
