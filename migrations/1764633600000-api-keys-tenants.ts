import { MigrationInterface, QueryRunner, Table, TableColumn } from 'typeorm';

/**
 * Client API key settings (source, per-key limits, default priority, allowed models, expiry) and the
 * `tenants` table of settings stored through the admin API. Portable like the initial schema:
 * varchar, bigint and text only; limits are BIGINT so any safe JavaScript integer fits.
 */
export class ApiKeysTenants1764633600000 implements MigrationInterface {
  name = 'ApiKeysTenants1764633600000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.addColumns('api_keys', [
      new TableColumn({ name: 'source', type: 'varchar', length: '16', default: "'admin'" }),
      new TableColumn({ name: 'rpm', type: 'bigint', isNullable: true }),
      new TableColumn({ name: 'tpm', type: 'bigint', isNullable: true }),
      new TableColumn({ name: 'priority', type: 'varchar', length: '16', isNullable: true }),
      new TableColumn({ name: 'models', type: 'text', isNullable: true }),
      new TableColumn({ name: 'expires_at', type: 'bigint', isNullable: true }),
    ]);

    await queryRunner.createTable(
      new Table({
        name: 'tenants',
        columns: [
          { name: 'id', type: 'varchar', length: '64', isPrimary: true },
          { name: 'rpm', type: 'bigint', isNullable: true },
          { name: 'tpm', type: 'bigint', isNullable: true },
          { name: 'tokens_per_day', type: 'bigint', isNullable: true },
          { name: 'priority', type: 'varchar', length: '16', isNullable: true },
          { name: 'max_priority', type: 'varchar', length: '16', isNullable: true },
          { name: 'max_queued', type: 'bigint', isNullable: true },
          { name: 'models', type: 'text', isNullable: true },
          { name: 'created_at', type: 'bigint' },
          { name: 'updated_at', type: 'bigint' },
        ],
      }),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropTable('tenants');
    for (const column of ['expires_at', 'models', 'priority', 'tpm', 'rpm', 'source']) await queryRunner.dropColumn('api_keys', column);
  }
}
