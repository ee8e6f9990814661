import { MigrationInterface, QueryRunner, Table, TableColumnOptions } from 'typeorm';

/**
 * Providers, worker records and client API keys. Written with the schema builder and only types
 * both SQLite and PostgreSQL understand (varchar, integer, bigint, boolean, text); timestamps are
 * epoch milliseconds in BIGINT columns.
 */
export class InitialSchema1763683200000 implements MigrationInterface {
  name = 'InitialSchema1763683200000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.createTable(
      new Table({
        name: 'providers',
        columns: [
          varchar('name', 64, { isPrimary: true }),
          varchar('secret_hash', 255, { isNullable: true }),
          { name: 'enabled', type: 'boolean' },
          { name: 'max_queue_len', type: 'integer' },
          millis('queue_timeout_ms'),
          millis('request_timeout_ms'),
          { name: 'max_models_per_worker', type: 'integer' },
          { name: 'models', type: 'text' },
          varchar('source', 16),
          millis('created_at'),
          millis('updated_at'),
        ],
      }),
    );

    await queryRunner.createTable(
      new Table({
        name: 'worker_records',
        columns: [
          varchar('id', 128, { isPrimary: true }),
          varchar('provider', 64),
          varchar('name', 255),
          { name: 'models', type: 'text' },
          { name: 'max_concurrent', type: 'integer' },
          varchar('gateway_instance_id', 128),
          varchar('remote_address', 128),
          millis('connected_at'),
          millis('last_heartbeat_at'),
          millis('disconnected_at', { isNullable: true }),
          varchar('state', 16),
        ],
        indices: [
          { name: 'IDX_worker_records_state_heartbeat', columnNames: ['state', 'last_heartbeat_at'] },
          { name: 'IDX_worker_records_provider', columnNames: ['provider'] },
        ],
      }),
    );

    await queryRunner.createTable(
      new Table({
        name: 'api_keys',
        columns: [
          varchar('id', 64, { isPrimary: true }),
          varchar('name', 128),
          varchar('key_hash', 255),
          varchar('prefix', 32),
          varchar('tenant', 64),
          { name: 'enabled', type: 'boolean' },
          millis('created_at'),
          millis('last_used_at', { isNullable: true }),
          millis('revoked_at', { isNullable: true }),
        ],
        indices: [{ name: 'UQ_api_keys_key_hash', columnNames: ['key_hash'], isUnique: true }],
      }),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropTable('api_keys');
    await queryRunner.dropTable('worker_records');
    await queryRunner.dropTable('providers');
  }
}

function varchar(name: string, length: number, extra: Partial<TableColumnOptions> = {}): TableColumnOptions {
  return { name, type: 'varchar', length: String(length), ...extra };
}

function millis(name: string, extra: Partial<TableColumnOptions> = {}): TableColumnOptions {
  return { name, type: 'bigint', ...extra };
}
