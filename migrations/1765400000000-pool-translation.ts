import { MigrationInterface, QueryRunner, TableColumn } from 'typeorm';

/**
 * A pool's own translation setting (`providers[].translation`, admin `translation`): `auto` or
 * `never`. Nullable: null (every row written before) = the gateway's `routing.translation`.
 * Portable: one nullable VARCHAR column (SQLite and PostgreSQL alike).
 */
export class PoolTranslation1765400000000 implements MigrationInterface {
  name = 'PoolTranslation1765400000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.addColumn('providers', new TableColumn({ name: 'translation', type: 'varchar', length: '16', isNullable: true }));
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropColumn('providers', 'translation');
  }
}
