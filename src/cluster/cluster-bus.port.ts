/**
 * The cluster bus: how a replica tells the others that something it holds in memory changed (an
 * API key, a tenant, a provider, a cordon, a reload). Messages are hints, never state: a receiver
 * re-reads the changed thing from PostgreSQL (or applies a cordon/reload it can repeat), so a lost
 * message is repaired by `onResync`, and a repeated one changes nothing.
 *
 * A single process uses `LocalClusterBus` (nothing to tell, no connection, no timer); cluster mode
 * `RedisClusterBus` (Redis pub/sub on `switchboard:cluster:bus`).
 */

/** Called with a message's data and the id of the replica that published it. */
export type ClusterBusHandler = (data: unknown, from: string) => void | Promise<void>;

/** Inject the abstract class: `constructor(private readonly bus: ClusterBus)`. */
export abstract class ClusterBus {
  /** True in cluster mode: messages go to the other replicas. */
  abstract readonly enabled: boolean;
  /**
   * Tells the other replicas (never this one). Fire and forget: never throws, never waits on Redis
   * (a send is bounded by `CLUSTER_REDIS_TIMEOUT_MS`); a message that could not be sent is sent
   * again once Redis answers.
   */
  abstract publish(topic: string, data: unknown): void;
  /** Handles the other replicas' messages of `topic`; returns the unsubscribe. */
  abstract subscribe(topic: string, handler: ClusterBusHandler): () => void;
  /**
   * Called once the bus is back after an outage: messages may have been lost meanwhile, so a
   * subscriber re-reads everything it holds from PostgreSQL. Returns the unsubscribe.
   */
  abstract onResync(handler: () => void | Promise<void>): () => void;
  /** Closes the connections; idempotent. */
  abstract close(): Promise<void>;
}

/** One message on the wire (JSON). */
export interface ClusterBusMessage {
  from: string;
  topic: string;
  data: unknown;
}

/** A wire message, or undefined for anything malformed (dropped, never thrown). */
export function parseBusMessage(raw: string): ClusterBusMessage | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  const { from, topic, data } = parsed as Record<string, unknown>;
  if (typeof from !== 'string' || from === '' || typeof topic !== 'string' || topic === '') return undefined;
  return { from, topic, data };
}

/** The topics the gateway's features publish (one place, so a typo is a compile error). */
export const BUS_TOPICS = {
  apiKey: 'api-key',
  tenant: 'tenant',
  provider: 'provider',
  poolCordon: 'pool-cordon',
  workerCordon: 'worker-cordon',
  reload: 'reload',
} as const;
