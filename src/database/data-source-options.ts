import { join } from 'node:path';
import { DataSource, DataSourceOptions, Logger as TypeOrmLogger } from 'typeorm';
import { ApiKeyEntity } from '../auth/api-key.entity';
import { ProviderEntity } from '../providers/provider.entity';
import { WorkerRecordEntity } from '../registry/worker-record.entity';

export const ENTITIES = [ProviderEntity, WorkerRecordEntity, ApiKeyEntity];

/**
 * The hand-written migrations in the top-level `migrations/` folder: the TypeScript sources when
 * this file runs from `src/database` (ts-jest, ts-node), the compiled files when it runs from
 * `dist/database` (the build compiles migrations/ into dist/migrations with tsconfig.migrations.json).
 */
export function migrationsGlob(): string {
  return __filename.endsWith('.ts')
    ? join(__dirname, '..', '..', 'migrations', '*.ts')
    : join(__dirname, '..', 'migrations', '*.js');
}

export interface DataSourceExtras {
  /** Receives every statement; tests use it to count writes. */
  logger?: TypeOrmLogger;
}

/**
 * DataSource options for a DATABASE_URL:
 * - `sqlite:<path>` (also `sqlite://<path>`) → better-sqlite3 file; TypeORM creates missing parent directories;
 * - `sqlite::memory:` → in-memory SQLite;
 * - `postgres://…` / `postgresql://…` → PostgreSQL; an optional `?schema=<name>` query parameter puts
 *   every table (and the migrations table) in that existing schema.
 * Migrations are not run by the options themselves (`migrationsRun: false`); callers decide.
 */
export function buildDataSourceOptions(databaseUrl: string, extras: DataSourceExtras = {}): DataSourceOptions {
  const common = {
    entities: ENTITIES,
    migrations: [migrationsGlob()],
    synchronize: false,
    migrationsRun: false,
    // One transaction per migration, so a failure leaves the earlier ones applied and recorded.
    migrationsTransactionMode: 'each' as const,
    ...(extras.logger ? { logger: extras.logger, logging: true } : {}),
  };

  if (databaseUrl.startsWith('sqlite:')) {
    return { ...common, type: 'better-sqlite3', ...sqliteLocation(databaseUrl) };
  }
  if (/^postgres(ql)?:\/\//.test(databaseUrl)) {
    const { url, schema } = splitSchemaParam(databaseUrl);
    return {
      ...common,
      type: 'postgres',
      url,
      ...(schema ? { schema, extra: { options: `-c search_path=${schema}` } } : {}),
    };
  }
  throw new Error('DATABASE_URL must start with sqlite:, postgres:// or postgresql://');
}

/** A DataSource for one-off use outside Nest (the `switchboard migrate` command, tests). Not initialized. */
export function createDataSource(databaseUrl: string, extras: DataSourceExtras = {}): DataSource {
  return new DataSource(buildDataSourceOptions(databaseUrl, extras));
}

function sqliteLocation(databaseUrl: string): { database: string; enableWAL: boolean } {
  const rest = databaseUrl.slice('sqlite:'.length);
  if (rest === ':memory:' || rest === '//:memory:') return { database: ':memory:', enableWAL: false };
  const path = rest.startsWith('//') ? rest.slice(2) : rest;
  if (path === '') throw new Error('DATABASE_URL sqlite: needs a file path, e.g. sqlite:./data/switchboard.db');
  // WAL lets readers (health checks, admin listings) proceed while a batch is being written.
  return { database: path, enableWAL: true };
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

function splitSchemaParam(databaseUrl: string): { url: string; schema?: string } {
  const parsed = new URL(databaseUrl);
  const schema = parsed.searchParams.get('schema') ?? undefined;
  if (schema === undefined) return { url: databaseUrl };
  if (!SCHEMA_NAME.test(schema)) throw new Error(`DATABASE_URL schema "${schema}" must be a lower-case SQL identifier`);
  parsed.searchParams.delete('schema');
  return { url: parsed.toString(), schema };
}
