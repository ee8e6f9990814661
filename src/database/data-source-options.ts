import { parseDatabaseUrl } from '../common/database-url';
import { join } from 'node:path';
import { DataSource, DataSourceOptions, Logger as TypeOrmLogger } from 'typeorm';

/**
 * Every entity of every feature, found by file name (`*.entity.ts` under `src/` when this file runs
 * from `src/database`, `*.entity.js` under `dist/` when it runs from `dist/database`), for the
 * DataSources made outside Nest (`switchboard migrate`, tests). In the application each feature's
 * module registers its own entities (`TypeOrmModule.forFeature`, collected by `autoLoadEntities`),
 * so this module names none of them.
 */
export function entitiesGlob(): string {
  return __filename.endsWith('.ts') ? join(__dirname, '..', '**', '*.entity.ts') : join(__dirname, '..', '**', '*.entity.js');
}

/**
 * The hand-written migrations in the top-level `migrations/` folder: the TypeScript sources when
 * this file runs from `src/database` (ts-jest, ts-node), the compiled files when it runs from
 * `dist/database` (the build compiles migrations/ into dist/migrations with tsconfig.migrations.json).
 */
export function migrationsGlob(): string {
  return __filename.endsWith('.ts') ? join(__dirname, '..', '..', 'migrations', '*.ts') : join(__dirname, '..', 'migrations', '*.js');
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
    entities: [entitiesGlob()],
    migrations: [migrationsGlob()],
    synchronize: false,
    migrationsRun: false,
    // One transaction per migration, so a failure leaves the earlier ones applied and recorded.
    migrationsTransactionMode: 'each' as const,
    ...(extras.logger ? { logger: extras.logger, logging: true } : {}),
  };

  const target = parseDatabaseUrl(databaseUrl);
  if (target.kind === 'sqlite') {
    return { ...common, type: 'better-sqlite3', database: target.database, enableWAL: target.enableWAL };
  }
  return {
    ...common,
    type: 'postgres',
    url: target.url,
    ...(target.schema ? { schema: target.schema, extra: { options: `-c search_path=${target.schema}` } } : {}),
  };
}

/** A DataSource for one-off use outside Nest (the `switchboard migrate` command, tests). Not initialized. */
export function createDataSource(databaseUrl: string, extras: DataSourceExtras = {}): DataSource {
  return new DataSource(buildDataSourceOptions(databaseUrl, extras));
}
