import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { epochMillis } from '../common/column-transformers';

/**
 * Row of `artifact_tags`: one tag of one artifact, so `?tag=` is an exact, indexed match on
 * SQLite and PostgreSQL alike. `created_at` repeats the artifact's, for retention.
 */
@Entity('artifact_tags')
@Index('IDX_artifact_tags_tenant_tag', ['tenant', 'tag'])
@Index('IDX_artifact_tags_created_at', ['createdAt'])
export class ArtifactTagEntity {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  tenant: string;

  @PrimaryColumn({ name: 'artifact_id', type: 'varchar', length: 64 })
  artifactId: string;

  @PrimaryColumn({ type: 'varchar', length: 128 })
  tag: string;

  @Column({ name: 'created_at', type: 'bigint', transformer: epochMillis })
  createdAt: number;
}
