import { TestRedisServer } from '../../rate-limit/support';
import { TEST_ADMIN_TOKEN } from '../../support/gateway';
import { admin, eventually } from '../../support/http';
import { closeGateways, ProcessGateway, startGatewayProcess } from './gateway-process';
import { freshSchema, FreshSchema } from './postgres';

/** CLUSTER_SECRET of the replicas `startReplicas` starts. */
export const REPLICA_SECRET = 'cluster-secret-0123456789abcdef0123';

/** How long `startReplicas` waits for the replicas to list each other (it waits for state, never times it). */
const MEMBERS_WAIT = 15_000;

/** What a cluster suite's replicas share: a redis-server of its own (on a free port) and a fresh PostgreSQL schema. */
export interface ClusterStore {
  readonly redis: TestRedisServer;
  readonly schema: FreshSchema;
  /** Stops Redis and drops the schema (each at most once, the drop even when the stop failed). */
  close(): Promise<void>;
}

/**
 * Starts a redis-server and makes a fresh schema named after `label` and this process (two runs of
 * one suite at once, say a CI clone and a working tree, must not drop each other's schema); on
 * failure, what was made is undone.
 */
export async function startClusterStore(label: string): Promise<ClusterStore> {
  const redis = await TestRedisServer.start();
  let schema: FreshSchema;
  try {
    schema = await freshSchema(`${label}_${process.pid}`);
  } catch (e) {
    await redis.stop();
    throw e;
  }
  let closed: Promise<void> | undefined;
  const close = async () => {
    try {
      await redis.stop();
    } finally {
      await schema.drop();
    }
  };
  return { redis, schema, close: () => (closed ??= close()) };
}

export interface ReplicaOptions {
  /** Added to every replica's environment, over the defaults (cluster mode on the suite's Redis and schema, replica timeout 1.5 s). */
  env?: Record<string, string>;
  /** Added to one replica's environment, last (a port of its own). */
  envOf?: (id: string) => Record<string, string> | Promise<Record<string, string>>;
  /** `together` (default): every replica boots at once, migrating the empty schema under the lock; `first-alone`: the first, then the others together. */
  boot?: 'together' | 'first-alone';
  /** Wait until every replica lists all of them on /admin/cluster (default true). */
  awaitMembers?: boolean;
}

/** Replicas (each a real `node dist/main.js` process) on their own Redis and PostgreSQL schema. */
export interface Replicas extends ClusterStore {
  /** The replicas started by `startReplicas`, in the order of its ids. */
  readonly gateways: ProcessGateway[];
  /** The replica of that id started last. */
  get(id: string): ProcessGateway;
  /** Starts a replica (another, or one closed before, again) with the same settings. */
  start(id: string): Promise<ProcessGateway>;
  /** Waits until each of `gateways` lists `count` members (default: all of `gateways`). */
  members(gateways?: ProcessGateway[], count?: number): Promise<void>;
  /**
   * For afterAll: closes every replica it started (closeGateways: one after the other, then any
   * process of the file still running is killed), then stops Redis and drops the schema, whatever failed.
   */
  close(): Promise<void>;
}

/**
 * A cluster suite's set-up: Redis, a fresh schema named after `label`, and a replica per id
 * (CLUSTER_REPLICA_ID), resolved once each is ready (and, unless told not to, all list each other).
 * If anything fails to start, whatever did start is closed before the error is thrown.
 */
export async function startReplicas(label: string, ids: string[], options: ReplicaOptions = {}): Promise<Replicas> {
  const store = await startClusterStore(label);
  const started: ProcessGateway[] = [];
  const byId = new Map<string, ProcessGateway>();
  const start = async (id: string) => {
    const gw = await startGatewayProcess({
      DATABASE_URL: store.schema.url,
      CLUSTER_REDIS_URL: store.redis.url,
      CLUSTER_SECRET: REPLICA_SECRET,
      CLUSTER_REPLICA_ID: id,
      CLUSTER_REPLICA_TIMEOUT_SECS: '1.5',
      ...options.env,
      ...(await options.envOf?.(id)),
    });
    started.push(gw);
    byId.set(id, gw);
    return gw;
  };
  const members = async (gateways = ids.map((id) => byId.get(id)!), count = gateways.length) => {
    for (const g of gateways) {
      await eventually(
        async () => (await admin(g.url, 'GET', '/admin/cluster', TEST_ADMIN_TOKEN)).json?.members?.length === count,
        MEMBERS_WAIT,
        `${count} members`,
      );
    }
  };
  let closed: Promise<void> | undefined;
  const close = async () => {
    try {
      await closeGateways(started);
    } finally {
      await store.close();
    }
  };
  const replicas: Replicas = {
    redis: store.redis,
    schema: store.schema,
    gateways: [],
    get: (id) => byId.get(id) ?? missing(id),
    start,
    members,
    close: () => (closed ??= close()),
  };
  try {
    const [first, ...rest] = ids;
    const booting = options.boot === 'first-alone' ? [[first], rest] : [ids];
    for (const group of booting) {
      const results = await Promise.allSettled(group.map(start));
      const failed = results.find((r) => r.status === 'rejected');
      if (failed) throw failed.reason;
    }
    replicas.gateways.push(...ids.map((id) => byId.get(id)!));
    if (options.awaitMembers !== false) await members();
  } catch (e) {
    await replicas.close().catch(() => undefined);
    throw e;
  }
  return replicas;
}

function missing(id: string): never {
  throw new Error(`no replica ${id} was started`);
}
