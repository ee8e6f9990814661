import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '..';

const PG = 'postgres://sb@db.internal:5432/switchboard';
const SECRET = 'x'.repeat(32);
const ON = { CLUSTER_REDIS_URL: 'redis://redis.internal:6379', DATABASE_URL: PG, CLUSTER_SECRET: SECRET };

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  return [];
}

describe('cluster configuration', () => {
  it('is off by default: no cluster Redis, rate limits stay in memory, an id of host and pid', () => {
    const c = loadConfig({});
    expect(c.cluster.redisUrl).toBeUndefined();
    expect(c.redisUrl).toBeUndefined();
    expect(c.cluster.replicaId).toMatch(new RegExp(`-${process.pid}$`));
    expect(c.cluster).toMatchObject({ replicaTimeoutMs: 10_000, redisTimeoutMs: 200 });
  });

  it('turns on with CLUSTER_REDIS_URL, and the rate limits share that Redis unless REDIS_URL names another', () => {
    const c = loadConfig({ ...ON, CLUSTER_REPLICA_ID: 'gw-a', CLUSTER_REPLICA_TIMEOUT_SECS: '3', CLUSTER_REDIS_TIMEOUT_MS: '50' });
    expect(c.cluster).toMatchObject({ redisUrl: ON.CLUSTER_REDIS_URL, replicaId: 'gw-a', replicaTimeoutMs: 3000, redisTimeoutMs: 50, secret: SECRET });
    expect(c.redisUrl).toBe(ON.CLUSTER_REDIS_URL);
    expect(loadConfig({ ...ON, REDIS_URL: 'redis://limits.internal:6379' }).redisUrl).toBe('redis://limits.internal:6379');
  });

  it('refuses SQLite in cluster mode with one line naming both settings', () => {
    const problems = problemsOf({ ...ON, DATABASE_URL: 'sqlite::memory:' });
    expect(problems).toEqual(['cluster mode (CLUSTER_REDIS_URL) needs PostgreSQL: set DATABASE_URL to a postgres:// URL, SQLite cannot be shared by replicas']);
    // The default database is SQLite too.
    expect(problemsOf({ CLUSTER_REDIS_URL: ON.CLUSTER_REDIS_URL, CLUSTER_SECRET: SECRET })).toHaveLength(1);
  });

  it('requires a long enough CLUSTER_SECRET in cluster mode, and never echoes it', () => {
    expect(problemsOf({ ...ON, CLUSTER_SECRET: '' })).toEqual([expect.stringMatching(/CLUSTER_SECRET is required/)]);
    const short = problemsOf({ ...ON, CLUSTER_SECRET: 'hunter2-short' });
    expect(short).toEqual([expect.stringMatching(/at least 32/)]);
    expect(short.join(' ')).not.toContain('hunter2');
    // Outside cluster mode the secret is not needed.
    expect(problemsOf({ DATABASE_URL: PG })).toEqual([]);
  });

  it('names every bad value', () => {
    const problems = problemsOf({
      ...ON,
      CLUSTER_REDIS_URL: 'http://redis',
      CLUSTER_REPLICA_ID: 'bad id',
      CLUSTER_ADVERTISE_URL: 'ftp://x',
      CLUSTER_LISTEN_ADDR: 'nowhere',
      CLUSTER_REPLICA_TIMEOUT_SECS: '0',
      CLUSTER_REDIS_TIMEOUT_MS: 'soon',
    });
    for (const name of [
      'CLUSTER_REDIS_URL',
      'CLUSTER_REPLICA_ID',
      'CLUSTER_ADVERTISE_URL',
      'CLUSTER_LISTEN_ADDR',
      'CLUSTER_REPLICA_TIMEOUT_SECS',
      'CLUSTER_REDIS_TIMEOUT_MS',
    ]) {
      expect(problems.join('\n')).toContain(name);
    }
  });

  it('reads the cluster: section of the file (the secret only from the environment), the environment winning', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cluster-config-'));
    try {
      const path = join(dir, 'sb.yaml');
      writeFileSync(path, 'cluster:\n  redis_url: redis://r:6379\n  replica_id: from-file\n  advertise_url: http://gw-1:8080\n  replica_timeout_secs: 6\n');
      const c = loadConfig({ CONFIG_FILE: path, DATABASE_URL: PG, CLUSTER_SECRET: SECRET, CLUSTER_REPLICA_ID: 'from-env' });
      expect(c.cluster).toMatchObject({ redisUrl: 'redis://r:6379', replicaId: 'from-env', advertiseUrl: 'http://gw-1:8080', replicaTimeoutMs: 6000 });
      writeFileSync(path, 'cluster:\n  secret: in-a-file\n');
      expect(problemsOf({ CONFIG_FILE: path })).toEqual([expect.stringMatching(/^cluster\.secret \(config file\) is not a cluster setting/)]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
