import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { epochMillis } from '../common/column-transformers';

/**
 * Row of `artifacts`: one content-addressed artifact of one tenant. Ids are unique within a
 * tenant (the tenant is the namespace, not part of the id), so the key is `(tenant, id)`. Rows
 * never change once written; JSON columns hold the text as stored (content as canonical JSON).
 */
@Entity('artifacts')
@Index('IDX_artifacts_created_at', ['createdAt'])
@Index('IDX_artifacts_tenant_created_at', ['tenant', 'createdAt'])
@Index('IDX_artifacts_tenant_session_created_at', ['tenant', 'sessionId', 'createdAt'])
export class ArtifactEntity {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  tenant: string;

  @PrimaryColumn({ type: 'varchar', length: 64 })
  id: string;

  @Column({ type: 'varchar', length: 32 })
  kind: string;

  @Column({ name: 'session_id', type: 'varchar', length: 128, nullable: true })
  sessionId: string | null;

  @Column({ name: 'job_id', type: 'varchar', length: 128, nullable: true })
  jobId: string | null;

  /** JSON array, sorted; `artifact_tags` holds the same tags for filtering. */
  @Column({ type: 'text' })
  tags: string;

  /** JSON array of artifact ids (lineage), sorted. */
  @Column({ type: 'text' })
  parents: string;

  /** JSON object. */
  @Column({ type: 'text' })
  metadata: string;

  /** Canonical JSON. */
  @Column({ type: 'text' })
  content: string;

  /** Bytes of `content`. */
  @Column({ type: 'integer' })
  size: number;

  @Column({ name: 'created_at', type: 'bigint', transformer: epochMillis })
  createdAt: number;
}
