import { MigrationInterface, QueryRunner, TableColumn, TableIndex } from 'typeorm';

/**
 * The audit trail of every admin action (issue 21): `lifecycle_audit` gains the action, who did it
 * (actor kind, subject, name, role), from where (source address, correlation id), on what (target
 * id) and what changed (summary, JSON text). Portable: nullable columns added one by one and a
 * plain UPDATE (`||` concatenates in SQLite and PostgreSQL alike) naming the action of older rows.
 */
export class AdminAudit1765300000000 implements MigrationInterface {
  name = 'AdminAudit1765300000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    for (const column of COLUMNS) await queryRunner.addColumn('lifecycle_audit', new TableColumn(column));
    await queryRunner.query(`UPDATE lifecycle_audit SET action = 'lifecycle.' || operation WHERE action IS NULL`);
    for (const [name, columnNames] of INDICES) await queryRunner.createIndex('lifecycle_audit', new TableIndex({ name, columnNames }));
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    for (const [name] of [...INDICES].reverse()) await queryRunner.dropIndex('lifecycle_audit', name);
    for (const column of [...COLUMNS].reverse()) await queryRunner.dropColumn('lifecycle_audit', column.name);
  }
}

const varchar = (name: string, length: number) => ({ name, type: 'varchar', length: String(length), isNullable: true });

const COLUMNS = [
  varchar('action', 64),
  varchar('actor_kind', 16),
  varchar('actor_subject', 255),
  varchar('actor_name', 255),
  varchar('role', 16),
  varchar('source_address', 64),
  varchar('correlation_id', 128),
  varchar('target_id', 255),
  { name: 'summary', type: 'text', isNullable: true },
];

const INDICES: Array<[string, string[]]> = [
  // ?action=… / ?actor=… / ?target=… over a time range.
  ['IDX_lifecycle_audit_action_at', ['action', 'at']],
  ['IDX_lifecycle_audit_actor_at', ['actor_subject', 'at']],
  ['IDX_lifecycle_audit_target_at', ['target_id', 'at']],
];
