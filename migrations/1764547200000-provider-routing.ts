import { MigrationInterface, QueryRunner, TableColumn } from 'typeorm';

/** Provider routing settings: a priority (nullable) and per-model capability declarations (JSON text). */
export class ProviderRouting1764547200000 implements MigrationInterface {
  name = 'ProviderRouting1764547200000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.addColumn('providers', new TableColumn({ name: 'priority', type: 'integer', isNullable: true }));
    await queryRunner.addColumn('providers', new TableColumn({ name: 'capabilities', type: 'text', default: "'{}'" }));
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropColumn('providers', 'capabilities');
    await queryRunner.dropColumn('providers', 'priority');
  }
}
