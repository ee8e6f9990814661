import { MigrationInterface, QueryRunner, TableColumn } from 'typeorm';

/**
 * `max_concurrent` of API keys and tenants: how many of their requests may be on workers at once
 * (null = no cap). Portable: one nullable BIGINT column per table (SQLite and PostgreSQL alike).
 */
export class MaxConcurrent1765256400000 implements MigrationInterface {
  name = 'MaxConcurrent1765256400000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.addColumn('api_keys', new TableColumn({ name: 'max_concurrent', type: 'bigint', isNullable: true }));
    await queryRunner.addColumn('tenants', new TableColumn({ name: 'max_concurrent', type: 'bigint', isNullable: true }));
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropColumn('tenants', 'max_concurrent');
    await queryRunner.dropColumn('api_keys', 'max_concurrent');
  }
}
