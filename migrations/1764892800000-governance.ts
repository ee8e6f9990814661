import { MigrationInterface, QueryRunner, Table, TableColumnOptions } from 'typeorm';

/**
 * Governed model lifecycle: the nonces of spent op tokens (replay protection that survives a
 * restart and is shared by replicas) and the audit trail of lifecycle operations, append-only.
 */
export class Governance1764892800000 implements MigrationInterface {
  name = 'Governance1764892800000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.createTable(
      new Table({
        name: 'op_token_nonces',
        columns: [varchar('nonce', 128, { isPrimary: true }), { name: 'expires_at', type: 'bigint' }],
        // Pruning by expiry.
        indices: [{ name: 'IDX_op_token_nonces_expires_at', columnNames: ['expires_at'] }],
      }),
    );
    await queryRunner.createTable(
      new Table({
        name: 'lifecycle_audit',
        columns: [
          { name: 'id', type: 'integer', isPrimary: true, isGenerated: true, generationStrategy: 'increment' },
          { name: 'at', type: 'bigint' },
          varchar('operation', 16),
          varchar('model_id', 255, { isNullable: true }),
          varchar('scope', 16, { isNullable: true }),
          { name: 'target', type: 'text' },
          { name: 'workers', type: 'text' },
          { name: 'signers', type: 'text', isNullable: true },
          varchar('nonce', 128, { isNullable: true }),
          varchar('admin_identity', 64, { isNullable: true }),
          varchar('outcome', 16),
          { name: 'status', type: 'integer' },
          varchar('error_code', 64, { isNullable: true }),
          varchar('error', 1024, { isNullable: true }),
          varchar('task_id', 64, { isNullable: true }),
        ],
        indices: [
          // Time-range filters.
          { name: 'IDX_lifecycle_audit_at', columnNames: ['at'] },
          // ?operation=… over a time range.
          { name: 'IDX_lifecycle_audit_operation_at', columnNames: ['operation', 'at'] },
        ],
      }),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropTable('lifecycle_audit');
    await queryRunner.dropTable('op_token_nonces');
  }
}

function varchar(name: string, length: number, extra: Partial<TableColumnOptions> = {}): TableColumnOptions {
  return { name, type: 'varchar', length: String(length), ...extra };
}
