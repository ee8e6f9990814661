import { DataSource } from 'typeorm';
import { buildDataSourceOptions } from '../../src/database/data-source-options';
import { connectAndMigrate } from '../../src/database/database.module';
import { describeWithPostgres, freshSchema, FreshSchema } from './support/postgres';

describeWithPostgres('migrations under the lock: replicas booting together on an empty PostgreSQL schema', () => {
  let schema: FreshSchema;
  const opened: DataSource[] = [];

  beforeEach(async () => {
    schema = await freshSchema(`miglock_${process.pid}`);
  });
  afterEach(async () => {
    for (const ds of opened.splice(0)) if (ds.isInitialized) await ds.destroy();
    await schema.drop();
  });

  it('all three boot, the migrations run exactly once, and the schema is complete', async () => {
    const options = buildDataSourceOptions(schema.url);
    const results = await Promise.allSettled([0, 1, 2].map(() => connectAndMigrate(options)));
    for (const r of results) if (r.status === 'fulfilled') opened.push(r.value);
    expect(results.map((r) => (r.status === 'fulfilled' ? 'booted' : String(r.reason)))).toEqual(['booted', 'booted', 'booted']);

    const ds = opened[0];
    const files = ds.migrations.map((m) => m.name ?? m.constructor.name).sort();
    const rows: Array<{ name: string }> = await ds.query('SELECT name FROM migrations ORDER BY name');
    // Each migration recorded once: none ran twice.
    expect(rows.map((r) => r.name).sort()).toEqual(files);
    expect(await opened[2].showMigrations()).toBe(false);
  });
});
