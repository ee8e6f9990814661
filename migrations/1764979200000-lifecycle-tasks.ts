import { MigrationInterface, QueryRunner, Table, TableColumnOptions } from 'typeorm';

/** Model-load tasks (`GET /v1/models/load/:taskId`), kept at least a day after their last change. */
export class LifecycleTasks1764979200000 implements MigrationInterface {
  name = 'LifecycleTasks1764979200000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.createTable(
      new Table({
        name: 'lifecycle_tasks',
        columns: [
          varchar('id', 64, { isPrimary: true }),
          varchar('operation', 16),
          varchar('model_id', 255),
          varchar('status', 16),
          varchar('error', 1024, { isNullable: true }),
          { name: 'options', type: 'text' },
          { name: 'workers', type: 'text' },
          varchar('gateway_instance_id', 128),
          { name: 'created_at', type: 'bigint' },
          { name: 'updated_at', type: 'bigint' },
          { name: 'finished_at', type: 'bigint', isNullable: true },
        ],
        indices: [
          // Retention pruning.
          { name: 'IDX_lifecycle_tasks_updated_at', columnNames: ['updated_at'] },
          // At boot: this instance's tasks a previous run left loading.
          { name: 'IDX_lifecycle_tasks_status_instance', columnNames: ['status', 'gateway_instance_id'] },
        ],
      }),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropTable('lifecycle_tasks');
  }
}

function varchar(name: string, length: number, extra: Partial<TableColumnOptions> = {}): TableColumnOptions {
  return { name, type: 'varchar', length: String(length), ...extra };
}
