import { MigrationInterface, QueryRunner, TableColumn } from 'typeorm';

/** Pool-scoped aliases of a provider (`POST /v1/pools/:id/reload`): JSON text alias → model. */
export class PoolAliases1764806400000 implements MigrationInterface {
  name = 'PoolAliases1764806400000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.addColumn('providers', new TableColumn({ name: 'aliases', type: 'text', default: "'{}'" }));
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropColumn('providers', 'aliases');
  }
}
