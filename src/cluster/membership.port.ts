/**
 * Cluster membership: which gateway replicas are alive, as every replica sees it. The port is what
 * the rest of the gateway reads (health, /admin/cluster, and next the shared fleet and forwarding);
 * a single process uses `SingleProcessMembership` (itself only, no timers), cluster mode
 * `HeartbeatMembership` over a `MembershipStore` (Redis).
 */

/** One replica as it announces itself: plain data, the same in Redis and in the API. */
export interface ReplicaRecord {
  id: string;
  /** Where the other replicas reach it (`http(s)://host:port`). */
  advertise_url: string;
  /** Epoch ms the replica process started (its own clock). */
  started_at: number;
  /** Epoch ms of its last heartbeat, by the store's clock (Redis TIME), so replicas' clocks never need to agree. */
  last_seen: number;
  /** The gateway version it runs (mixed versions show during a rolling upgrade). */
  version: string;
}

/** What changed in the member list since the last report; ids only. */
export interface MembershipChange {
  joined: string[];
  left: string[];
}

/** Where membership reports its state (MetricsService's cluster gauges read it). */
export interface MembershipView {
  readonly enabled: boolean;
  readonly replicaId: string;
  degraded(): boolean;
  members(): ReplicaRecord[];
}

/** The two levels membership logs at (AppLogger and Nest's Logger fit). */
export interface ClusterLogger {
  log(message: string, context?: string): void;
  warn(message: string, context?: string): void;
}

/** Inject the abstract class: `constructor(private readonly membership: Membership)`. */
export abstract class Membership implements MembershipView {
  /** True in cluster mode (`CLUSTER_REDIS_URL` set). */
  abstract readonly enabled: boolean;
  abstract readonly replicaId: string;
  /** This replica's advertised address; undefined until known (the listener's port is picked at listen). */
  abstract advertiseUrl(): string | undefined;
  /** Live replicas, this one included (first), as last learnt: never waits on the store. */
  abstract members(): ReplicaRecord[];
  /** True while the store cannot be reached: the replica serves alone and retries. */
  abstract degraded(): boolean;
  /** Re-reads the member list now (bounded by the store's timeout); never throws. */
  abstract refresh(): Promise<void>;
  /** Subscribes to joins and leaves (and the whole list going away while degraded); returns the unsubscribe. */
  abstract onChange(listener: (change: MembershipChange) => void): () => void;
  /** Announces this replica and starts heartbeating, with the address the others reach it at. */
  abstract start(advertiseUrl: string): void;
  /** Removes this replica at once (the others stop listing it) and stops; idempotent. */
  abstract stop(): Promise<void>;
}
