import { MigrationInterface, QueryRunner, Table, TableColumnOptions } from 'typeorm';

/**
 * Usage records for chargeback: one row per finished client request (counts and timings, never
 * content). Portable types only; the UTC day is a `YYYY-MM-DD` column written with the row, so
 * grouping by day needs no database-specific date function.
 */
export class UsageRecords1764720000000 implements MigrationInterface {
  name = 'UsageRecords1764720000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.createTable(
      new Table({
        name: 'usage_records',
        columns: [
          varchar('id', 64, { isPrimary: true }),
          { name: 'received_at', type: 'bigint' },
          varchar('day', 10),
          varchar('tenant', 64),
          varchar('key_id', 64, { isNullable: true }),
          varchar('requested_model', 255),
          varchar('served_model', 255, { isNullable: true }),
          varchar('provider', 64, { isNullable: true }),
          varchar('worker_id', 128, { isNullable: true }),
          varchar('worker_name', 255, { isNullable: true }),
          varchar('endpoint', 64),
          { name: 'status', type: 'integer' },
          varchar('error_code', 64, { isNullable: true }),
          { name: 'prompt_tokens', type: 'integer', isNullable: true },
          { name: 'completion_tokens', type: 'integer', isNullable: true },
          { name: 'queue_wait_ms', type: 'integer' },
          { name: 'ttfb_ms', type: 'integer', isNullable: true },
          { name: 'duration_ms', type: 'integer' },
        ],
        indices: [
          // Retention pruning and time-range filters.
          { name: 'IDX_usage_records_received_at', columnNames: ['received_at'] },
          // /admin/usage?tenant=… and ?key=… over a time range.
          { name: 'IDX_usage_records_tenant_received_at', columnNames: ['tenant', 'received_at'] },
          { name: 'IDX_usage_records_key_received_at', columnNames: ['key_id', 'received_at'] },
        ],
      }),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropTable('usage_records');
  }
}

function varchar(name: string, length: number, extra: Partial<TableColumnOptions> = {}): TableColumnOptions {
  return { name, type: 'varchar', length: String(length), ...extra };
}
