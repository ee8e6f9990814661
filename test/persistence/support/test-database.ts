import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { DataSource, Logger as TypeOrmLogger } from 'typeorm';
import { AppConfig, loadConfig } from '../../../src/config';
import { createDataSource } from '../../../src/database/data-source-options';

/**
 * The database a persistence suite runs against: a fresh SQLite file in a temporary directory,
 * or, when TEST_DATABASE_URL is set, a fresh schema of that PostgreSQL database (dropped afterwards),
 * so concurrent runs never see each other's tables.
 */
export interface TestDatabase {
  readonly kind: 'sqlite' | 'postgres';
  /** DATABASE_URL selecting this database (and schema). */
  readonly url: string;
  /** A new, initialized DataSource on this database; closed by `dispose`. Migrations not run. */
  connect(logger?: TypeOrmLogger): Promise<DataSource>;
  dispose(): Promise<void>;
}

export const onPostgres = Boolean(process.env.TEST_DATABASE_URL);

export async function createTestDatabase(label: string): Promise<TestDatabase> {
  const opened: DataSource[] = [];
  const connect = async (url: string, logger?: TypeOrmLogger) => {
    const ds = createDataSource(url, { logger });
    await ds.initialize();
    opened.push(ds);
    return ds;
  };
  const closeAll = async () => {
    for (const ds of opened) if (ds.isInitialized) await ds.destroy();
  };

  const base = process.env.TEST_DATABASE_URL;
  if (base) {
    const schema = `sb_${label.replace(/[^a-z0-9]/gi, '_').toLowerCase()}_${process.pid}_${Date.now().toString(36)}`;
    await withClient(base, (c) => c.query(`CREATE SCHEMA "${schema}"`));
    const url = `${base}${base.includes('?') ? '&' : '?'}schema=${schema}`;
    return {
      kind: 'postgres',
      url,
      connect: (logger) => connect(url, logger),
      dispose: async () => {
        await closeAll();
        await withClient(base, (c) => c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`));
      },
    };
  }

  const dir = mkdtempSync(join(tmpdir(), `switchboard-${label}-`));
  const url = `sqlite:${join(dir, 'switchboard.db')}`;
  return {
    kind: 'sqlite',
    url,
    connect: (logger) => connect(url, logger),
    dispose: async () => {
      await closeAll();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function withClient(url: string, run: (c: Client) => Promise<unknown>): Promise<void> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    await run(client);
  } finally {
    await client.end();
  }
}

/** A full, valid AppConfig for `databaseUrl`, with the persistence settings the suites reason about. */
export function testConfig(databaseUrl: string, overrides: Partial<AppConfig> = {}): AppConfig {
  return {
    ...loadConfig({ DATABASE_URL: databaseUrl }),
    instanceId: 'gw-test',
    heartbeatIntervalMs: 15_000,
    heartbeatTimeoutMs: 45_000,
    heartbeatFlushIntervalMs: 5_000,
    staleSweepIntervalMs: 60_000,
    workerRecordRetentionMs: 7 * 24 * 3600_000,
    recentWorkerWindowMs: 300_000,
    ...overrides,
  };
}
