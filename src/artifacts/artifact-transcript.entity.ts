import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { epochMillis } from '../common/column-transformers';

/**
 * Row of `artifact_transcripts`: a job's SSE transcript too large to sit inline in its content
 * (`ARTIFACTS_INLINE_TRANSCRIPT_BYTES`). The content keeps its size and SHA-256, so the id
 * covers it. `created_at` repeats the artifact's, for retention.
 */
@Entity('artifact_transcripts')
@Index('IDX_artifact_transcripts_created_at', ['createdAt'])
export class ArtifactTranscriptEntity {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  tenant: string;

  @PrimaryColumn({ name: 'artifact_id', type: 'varchar', length: 64 })
  artifactId: string;

  @Column({ type: 'text' })
  body: string;

  @Column({ name: 'created_at', type: 'bigint', transformer: epochMillis })
  createdAt: number;
}
