import { MigrationInterface, QueryRunner, TableColumn } from 'typeorm';

/** A tenant's most tokens and seconds per task session (`session_tokens`, `session_time_secs`). */
export class TenantSessionBudgets1764849600000 implements MigrationInterface {
  name = 'TenantSessionBudgets1764849600000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.addColumns('tenants', [
      new TableColumn({ name: 'session_tokens', type: 'bigint', isNullable: true }),
      new TableColumn({ name: 'session_time_secs', type: 'bigint', isNullable: true }),
    ]);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropColumns('tenants', ['session_tokens', 'session_time_secs']);
  }
}
