import { MigrationInterface, QueryRunner, TableColumn } from 'typeorm';

/**
 * GPU-time chargeback: the slot time of each usage record (`worker_ms`), the backend's own time
 * where a worker reports it (`backend_ms`), its GPU share (`gpu_ms`) and `cost`; a pool's
 * `cost_per_gpu_hour` and `gpus_per_worker`. All nullable: rows written before have none.
 * `double precision` is a type SQLite and PostgreSQL both accept.
 */
export class Chargeback1765250000000 implements MigrationInterface {
  name = 'Chargeback1765250000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.addColumns('usage_records', [
      new TableColumn({ name: 'worker_ms', type: 'integer', isNullable: true }),
      new TableColumn({ name: 'backend_ms', type: 'integer', isNullable: true }),
      new TableColumn({ name: 'gpu_ms', type: 'double precision', isNullable: true }),
      new TableColumn({ name: 'cost', type: 'double precision', isNullable: true }),
    ]);
    await queryRunner.addColumns('providers', [
      new TableColumn({ name: 'cost_per_gpu_hour', type: 'double precision', isNullable: true }),
      new TableColumn({ name: 'gpus_per_worker', type: 'double precision', isNullable: true }),
    ]);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropColumns('providers', ['cost_per_gpu_hour', 'gpus_per_worker']);
    await queryRunner.dropColumns('usage_records', ['worker_ms', 'backend_ms', 'gpu_ms', 'cost']);
  }
}
