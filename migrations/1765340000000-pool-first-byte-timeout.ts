import { MigrationInterface, QueryRunner, TableColumn } from 'typeorm';

/**
 * A pool's own first-byte watchdog timeout (`providers[].first_byte_timeout_secs`, admin
 * `first_byte_timeout_secs`). Nullable: null (every row written before) = the gateway's
 * `routing.first_byte_timeout_secs`. Portable: one nullable BIGINT column (SQLite and PostgreSQL alike).
 */
export class PoolFirstByteTimeout1765340000000 implements MigrationInterface {
  name = 'PoolFirstByteTimeout1765340000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.addColumn('providers', new TableColumn({ name: 'first_byte_timeout_ms', type: 'bigint', isNullable: true }));
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropColumn('providers', 'first_byte_timeout_ms');
  }
}
