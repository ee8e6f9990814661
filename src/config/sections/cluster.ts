import { hostname } from 'node:os';
import { Env, Reader } from '../../common/config-reader';
import { parseDatabaseUrl } from '../../common/database-url';
import { validateRedisUrl } from '../../common/redis-url';
import { group, num, read, secs, str, yamlKeys } from '../setting';

/** The `cluster:` section: several gateway replicas sharing Redis and PostgreSQL (docs/cluster.md). */
export interface ClusterConfig {
  /** Redis of the cluster; undefined = cluster mode off (one process, nothing shared). */
  redisUrl?: string;
  /** This replica's name among the others (host name + pid unless set). */
  replicaId: string;
  /** Where the other replicas reach this one; undefined = derived from the listener once it listens. */
  advertiseUrl?: string;
  /** Authenticates replica-to-replica calls. Named `secret` so log redaction hides it wherever it goes. */
  secret?: string;
  /** A separate listener for the internal routes (host:port); undefined = the public listener. */
  listenAddr?: string;
  /** A replica not heard from for this long is gone for the others. */
  replicaTimeoutMs: number;
  /** Longest a Redis command of the cluster may take before it counts as failed (the replica is then degraded). */
  redisTimeoutMs: number;
}

/** Long enough to resist guessing, short enough to fit a generated hex string of 16 bytes. */
export const CLUSTER_SECRET_MIN_LENGTH = 32;
const REPLICA_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
const HOST_PORT = /^(\[[^\]]+\]|[^:\s]*):(\d{1,5})$/;

export const CLUSTER_SETTINGS = group('cluster', 'cluster', {
  redisUrl: str({
    env: 'CLUSTER_REDIS_URL',
    yaml: 'redis_url',
    reload: 'restart',
    fields: ['redisUrl'],
    docDefault: 'none (one process)',
    doc: 'Redis of the cluster (`redis://` or `rediss://`). Set, cluster mode is on: it needs PostgreSQL (`DATABASE_URL`) and `CLUSTER_SECRET`, and the rate limits use this Redis too unless `REDIS_URL` names another ([cluster.md](cluster.md))',
  }),
  replicaId: str({
    env: 'CLUSTER_REPLICA_ID',
    yaml: 'replica_id',
    reload: 'restart',
    fields: ['replicaId'],
    docDefault: 'host name + `-` + pid',
    doc: "this replica's id among the others (letters, digits, `.`, `_`, `:`, `-`; at most 128). Two live replicas must not share one",
  }),
  advertiseUrl: str({
    env: 'CLUSTER_ADVERTISE_URL',
    yaml: 'advertise_url',
    reload: 'restart',
    fields: ['advertiseUrl'],
    docDefault: 'the listener (`CLUSTER_LISTEN_ADDR`, else `LISTEN_ADDR`; host name when it listens on all addresses)',
    doc: 'the `http(s)://host:port` where the other replicas reach this one',
  }),
  secret: str({
    env: 'CLUSTER_SECRET',
    reload: 'restart',
    fields: ['secret'],
    docDefault: 'none',
    doc: `shared by every replica; authenticates the internal routes between them. Required in cluster mode, at least ${CLUSTER_SECRET_MIN_LENGTH} characters (\`openssl rand -hex 32\`). Environment only, never logged or shown`,
  }),
  listenAddr: str({
    env: 'CLUSTER_LISTEN_ADDR',
    yaml: 'listen_addr',
    reload: 'restart',
    fields: ['listenAddr'],
    docDefault: 'none (the public listener)',
    doc: '`host:port` of a separate plain-HTTP listener for the internal routes between replicas (forwarding, tasks); the public listener then answers them 404. Keeps replica-to-replica traffic off the public port',
  }),
  replicaTimeout: secs({
    env: 'CLUSTER_REPLICA_TIMEOUT_SECS',
    yaml: 'replica_timeout_secs',
    default: 10,
    opts: { min: 1, max: 3600 },
    reload: 'restart',
    fields: ['replicaTimeoutMs'],
    doc: 'a replica that has not announced itself for this long is gone for the others; each replica announces itself every third of it',
  }),
  redisTimeout: num({
    env: 'CLUSTER_REDIS_TIMEOUT_MS',
    yaml: 'redis_timeout_ms',
    default: 200,
    opts: { min: 10, max: 10_000, integer: true },
    reload: 'restart',
    fields: ['redisTimeoutMs'],
    doc: 'longest a cluster Redis command may take before it counts as failed and the replica serves alone (degraded). A healthy Redis on the same network answers in about a millisecond, so 200 ms only trips on real trouble while staying far below what a client notices',
  }),
});
const S = CLUSTER_SETTINGS.settings;
const KEYS = yamlKeys(CLUSTER_SETTINGS);

/** The id a replica gets when none is set: unique per process on a host, readable in /admin/cluster. */
export function defaultReplicaId(): string {
  const host =
    hostname()
      .replace(/[^A-Za-z0-9._-]/g, '-')
      .replace(/^[^A-Za-z0-9]+/, '') || 'replica';
  return `${host.slice(0, 100)}-${process.pid}`;
}

/** Reads `cluster:` and checks what cluster mode needs (PostgreSQL, a long enough secret). */
export function readClusterConfig(env: Env, section: unknown, databaseUrl: string, problems: string[]): ClusterConfig {
  const yaml = section && typeof section === 'object' && !Array.isArray(section) ? (section as Record<string, unknown>) : {};
  if (section !== undefined && section !== null && yaml !== section) problems.push('cluster (config file) must be a mapping');
  const r = new Reader(env, yaml, 'cluster', KEYS);
  const redisUrl = read(r, env, S.redisUrl) || undefined;
  const config: ClusterConfig = {
    redisUrl,
    replicaId: read(r, env, S.replicaId) || defaultReplicaId(),
    advertiseUrl: read(r, env, S.advertiseUrl) || undefined,
    // Environment only: a secret in a file that is often committed is the mistake to prevent.
    secret: env[S.secret.env!] || undefined,
    listenAddr: read(r, env, S.listenAddr) || undefined,
    replicaTimeoutMs: read(r, env, S.replicaTimeout),
    redisTimeoutMs: read(r, env, S.redisTimeout),
  };
  for (const key of r.unknownKeys()) problems.push(`cluster.${key} (config file) is not a cluster setting (known: ${KEYS.join(', ')})`);
  problems.push(...r.problems);
  if (!REPLICA_ID.test(config.replicaId)) problems.push(`CLUSTER_REPLICA_ID must match ${REPLICA_ID.source}`);
  if (config.advertiseUrl !== undefined) checkAdvertiseUrl(config.advertiseUrl, problems);
  if (config.listenAddr !== undefined && !validListenAddr(config.listenAddr)) {
    problems.push(`CLUSTER_LISTEN_ADDR must be host:port, got "${config.listenAddr}"`);
  }
  if (redisUrl === undefined) return config;
  try {
    validateRedisUrl(redisUrl);
  } catch (e) {
    problems.push((e as Error).message.replace(/^REDIS_URL/, 'CLUSTER_REDIS_URL'));
  }
  if (isSqlite(databaseUrl)) {
    problems.push('cluster mode (CLUSTER_REDIS_URL) needs PostgreSQL: set DATABASE_URL to a postgres:// URL, SQLite cannot be shared by replicas');
  }
  if (!config.secret) problems.push(`CLUSTER_SECRET is required in cluster mode (at least ${CLUSTER_SECRET_MIN_LENGTH} characters)`);
  else if (config.secret.length < CLUSTER_SECRET_MIN_LENGTH) problems.push(`CLUSTER_SECRET must be at least ${CLUSTER_SECRET_MIN_LENGTH} characters`);
  return config;
}

function isSqlite(databaseUrl: string): boolean {
  try {
    return parseDatabaseUrl(databaseUrl).kind === 'sqlite';
  } catch {
    // A bad DATABASE_URL is reported by its own check.
    return false;
  }
}

function checkAdvertiseUrl(value: string, problems: string[]): void {
  let ok = false;
  try {
    const u = new URL(value);
    ok = (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '' && (u.pathname === '/' || u.pathname === '');
  } catch {
    ok = false;
  }
  if (!ok) problems.push(`CLUSTER_ADVERTISE_URL must be an http(s)://host:port URL without a path, got "${value}"`);
}

function validListenAddr(value: string): boolean {
  const m = HOST_PORT.exec(value.trim());
  return m !== null && Number(m[2]) <= 65535;
}
