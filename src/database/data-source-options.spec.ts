import { readdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { buildDataSourceOptions, migrationsGlob } from './data-source-options';

describe('buildDataSourceOptions', () => {
  it('maps sqlite:<path> to a better-sqlite3 file with WAL', () => {
    expect(buildDataSourceOptions('sqlite:./data/switchboard.db')).toMatchObject({
      type: 'better-sqlite3',
      database: './data/switchboard.db',
      enableWAL: true,
    });
    expect(buildDataSourceOptions('sqlite:///var/lib/sb.db')).toMatchObject({ database: '/var/lib/sb.db' });
  });

  it('maps sqlite::memory: to an in-memory database', () => {
    expect(buildDataSourceOptions('sqlite::memory:')).toMatchObject({ type: 'better-sqlite3', database: ':memory:' });
  });

  it('maps postgres:// and postgresql:// URLs to the postgres driver', () => {
    const url = 'postgres://user:p%40ss@db.internal:5432/switchboard?sslmode=require';
    expect(buildDataSourceOptions(url)).toMatchObject({ type: 'postgres', url });
    expect(buildDataSourceOptions('postgresql://db/sb')).toMatchObject({ type: 'postgres' });
    expect(buildDataSourceOptions(url)).not.toHaveProperty('schema');
  });

  it('takes ?schema= out of a PostgreSQL URL and uses it for tables and search_path', () => {
    const options = buildDataSourceOptions('postgres://db/sb?schema=tenant_a&sslmode=require');
    expect(options).toMatchObject({
      url: 'postgres://db/sb?sslmode=require',
      schema: 'tenant_a',
      extra: { options: '-c search_path=tenant_a' },
    });
    expect(() => buildDataSourceOptions('postgres://db/sb?schema=a;drop')).toThrow(/schema/);
  });

  it('never synchronizes, and leaves running migrations to the caller', () => {
    expect(buildDataSourceOptions('sqlite::memory:')).toMatchObject({ synchronize: false, migrationsRun: false, migrationsTransactionMode: 'each' });
  });

  it('rejects other URLs', () => {
    expect(() => buildDataSourceOptions('mysql://db/sb')).toThrow(/DATABASE_URL/);
    expect(() => buildDataSourceOptions('sqlite:')).toThrow(/path/);
  });
});

describe('migrationsGlob', () => {
  it('points at the top-level migrations folder, TypeScript sources when running from src/', () => {
    const pattern = migrationsGlob();
    expect(pattern).toMatch(/migrations\/\*\.ts$/);
    expect(readdirSync(dirname(pattern)).filter((f) => f.endsWith('.ts')).length).toBeGreaterThan(0);
  });
});
