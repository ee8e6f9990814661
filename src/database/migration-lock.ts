import type { DataSource, Migration } from 'typeorm';

/**
 * Runs the pending migrations; on PostgreSQL under a session advisory lock, so replicas starting
 * together on an empty database take turns: the first migrates, the others wait for the lock and
 * then find nothing pending (without it, two could create the same table and one would fail its
 * boot). The lock is per schema (`?schema=`), so databases sharing a server never wait on each other.
 * SQLite serves one process and needs no lock.
 */
export async function runMigrationsLocked(dataSource: DataSource): Promise<Migration[]> {
  if (dataSource.options.type !== 'postgres') return dataSource.runMigrations();
  const key = `switchboard:migrations:${dataSource.options.schema ?? 'public'}`;
  // The lock belongs to one connection: held on a runner of its own while the migrations use the pool.
  const runner = dataSource.createQueryRunner();
  try {
    await runner.connect();
    await runner.query('SELECT pg_advisory_lock(hashtext($1))', [key]);
    try {
      return await dataSource.runMigrations();
    } finally {
      // Released with the session anyway if this fails (the connection closing drops its locks).
      await runner.query('SELECT pg_advisory_unlock(hashtext($1))', [key]).catch(() => undefined);
    }
  } finally {
    await runner.release();
  }
}
