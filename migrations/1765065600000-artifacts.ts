import { MigrationInterface, QueryRunner, Table, TableColumnOptions } from 'typeorm';

/**
 * The artifact registry: content-addressed artifacts keyed by (tenant, id), their tags (one row
 * each, for exact `?tag=` filtering) and the transcripts of jobs too large to sit inline. Portable
 * types only; JSON is text. The tag and transcript rows repeat the artifact's `created_at`, so
 * retention deletes from each table by time alone.
 */
export class Artifacts1765065600000 implements MigrationInterface {
  name = 'Artifacts1765065600000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.createTable(
      new Table({
        name: 'artifacts',
        columns: [
          varchar('tenant', 64, { isPrimary: true }),
          varchar('id', 64, { isPrimary: true }),
          varchar('kind', 32),
          varchar('session_id', 128, { isNullable: true }),
          varchar('job_id', 128, { isNullable: true }),
          { name: 'tags', type: 'text' },
          { name: 'parents', type: 'text' },
          { name: 'metadata', type: 'text' },
          { name: 'content', type: 'text' },
          { name: 'size', type: 'integer' },
          { name: 'created_at', type: 'bigint' },
        ],
        indices: [
          // Retention.
          { name: 'IDX_artifacts_created_at', columnNames: ['created_at'] },
          // A tenant's listing, newest first; and within one session.
          { name: 'IDX_artifacts_tenant_created_at', columnNames: ['tenant', 'created_at'] },
          { name: 'IDX_artifacts_tenant_session_created_at', columnNames: ['tenant', 'session_id', 'created_at'] },
        ],
      }),
    );
    await queryRunner.createTable(
      new Table({
        name: 'artifact_tags',
        columns: [
          varchar('tenant', 64, { isPrimary: true }),
          varchar('artifact_id', 64, { isPrimary: true }),
          varchar('tag', 128, { isPrimary: true }),
          { name: 'created_at', type: 'bigint' },
        ],
        indices: [
          { name: 'IDX_artifact_tags_tenant_tag', columnNames: ['tenant', 'tag'] },
          { name: 'IDX_artifact_tags_created_at', columnNames: ['created_at'] },
        ],
      }),
    );
    await queryRunner.createTable(
      new Table({
        name: 'artifact_transcripts',
        columns: [
          varchar('tenant', 64, { isPrimary: true }),
          varchar('artifact_id', 64, { isPrimary: true }),
          { name: 'body', type: 'text' },
          { name: 'created_at', type: 'bigint' },
        ],
        indices: [{ name: 'IDX_artifact_transcripts_created_at', columnNames: ['created_at'] }],
      }),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropTable('artifact_transcripts');
    await queryRunner.dropTable('artifact_tags');
    await queryRunner.dropTable('artifacts');
  }
}

function varchar(name: string, length: number, extra: Partial<TableColumnOptions> = {}): TableColumnOptions {
  return { name, type: 'varchar', length: String(length), ...extra };
}
