import { MigrationInterface, QueryRunner, TableColumn } from 'typeorm';

/** The pools (provider names) a tenant's requests may reach (`pools`; null = every pool). */
export class TenantPools1765170000000 implements MigrationInterface {
  name = 'TenantPools1765170000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.addColumn('tenants', new TableColumn({ name: 'pools', type: 'text', isNullable: true }));
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropColumn('tenants', 'pools');
  }
}
