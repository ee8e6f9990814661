import { CacheStats, declaredFor, ModelCapabilities, RunnerInfo } from '../protocol';

/**
 * What routing, the queue and operators know about one worker: plain data, no socket, no timer.
 * In one process the worker's session is read through this type (no copy on the hot path); a
 * replica that does not hold the worker's socket sees the same fields from shared state
 * (`toSnapshotData` is the serialisable form). Only `Fleet.reserve` turns a snapshot into work.
 */
export interface WorkerSnapshot {
  readonly id: string;
  readonly name: string;
  readonly provider: string;
  /** The gateway replica that holds the worker's connection. */
  readonly replica: string;
  /** Advertised models by name (`*` excluded) and whether it also advertises `*`. */
  readonly models: ReadonlySet<string>;
  readonly wildcard: boolean;
  /** Models it still advertises that routing must not send it (an unload drains them). */
  readonly heldOut: ReadonlySet<string>;
  /** Capabilities it declares per model (`*` = every model). */
  readonly capabilities: Readonly<Record<string, ModelCapabilities>>;
  /** Endpoint paths its backend serves; undefined = not declared (every endpoint). */
  readonly endpoints: ReadonlySet<string> | undefined;
  /** Routing priority it declared (lower is preferred); undefined = not declared. */
  readonly declaredPriority: number | undefined;
  /** Concurrent requests it accepts. */
  readonly maxConcurrent: number;
  /** Slots in use: requests it runs, cancelled ones not yet confirmed, load it reported beyond those. */
  readonly load: number;
  /** Slots free for new work (0 while draining). */
  readonly freeSlots: number;
  readonly draining: boolean;
  readonly connectedAt: number;
  /** Last frame from it (a silent worker gets no new work until the link closes it). */
  readonly lastSeenAt: number;
  readonly remoteAddress: string;
  /** Protocol extensions negotiated at registration. */
  readonly features: ReadonlySet<string>;
  /** The inference server behind it, as its daemon detected it (optional). */
  readonly runner: RunnerInfo | undefined;
  /** The backend's runner-API capabilities document, as the worker relayed it (optional). */
  readonly runnerCapabilities: Record<string, unknown> | undefined;
  /** Declarations resolved per advertised model (`*` folded in); see `capabilitiesOf`. */
  readonly declaredByModel: ReadonlyMap<string, ModelCapabilities | null>;
  /** The backend's KV-cache usage and prefix-cache hit ratio from its latest `pong` (negotiated); undefined = none. */
  readonly cacheStats: CacheStats | undefined;
}

/**
 * A snapshot as routing reads it in this process: plus the rotation slot the routing strategy
 * writes on every decision (local bookkeeping, read for each candidate, never shared).
 */
export interface RoutableWorker extends WorkerSnapshot {
  rotationSeq: number;
  /** The worker's hash for cache affinity (of its name, so a reconnect keeps its keys); -1 = not yet computed. */
  affinityHash: number;
}

/**
 * A worker's health as routing judges it (routing's HealthTracker keeps it, keyed by worker): plain
 * data, so a snapshot can carry it to another replica or an operator.
 */
export interface WorkerHealthData {
  consecutive_failures: number;
  /** Epoch ms until which the worker is ejected; 0 when it is not. */
  ejected_until: number;
  /** Moving average of its time to first byte; null without a sample. */
  latency_ms: number | null;
}

/** The JSON form of a snapshot (sets as arrays): what another replica or an operator receives. */
export interface WorkerSnapshotData {
  id: string;
  name: string;
  provider: string;
  replica: string;
  models: string[];
  held_out: string[];
  capabilities: Record<string, ModelCapabilities>;
  endpoints: string[] | null;
  priority: number | null;
  max_concurrent: number;
  load: number;
  draining: boolean;
  connected_at: number;
  last_seen_at: number;
  cache_stats?: CacheStats;
  /** Routing's judgement of the worker, when the caller has it (Router.snapshotOf); null otherwise. */
  health: WorkerHealthData | null;
}

/** Whether routing may send the worker a request for `model` (advertised and not held out). */
export function servesModel(w: WorkerSnapshot, model: string): boolean {
  return (w.wildcard || w.models.has(model)) && !(w.heldOut.size > 0 && w.heldOut.has(model));
}

/** What the worker declares about one model, `*` included; undefined = nothing declared. */
export function capabilitiesOf(w: WorkerSnapshot, model: string): ModelCapabilities | undefined {
  const known = w.declaredByModel.get(model);
  if (known === undefined) return declaredFor(w.capabilities, model); // a model it serves through `*`
  return known ?? undefined;
}

export function toSnapshotData(w: WorkerSnapshot, health: WorkerHealthData | null = null): WorkerSnapshotData {
  return {
    id: w.id,
    name: w.name,
    provider: w.provider,
    replica: w.replica,
    models: [...w.models, ...(w.wildcard ? ['*'] : [])],
    held_out: [...w.heldOut],
    capabilities: { ...w.capabilities },
    endpoints: w.endpoints ? [...w.endpoints] : null,
    priority: w.declaredPriority ?? null,
    max_concurrent: w.maxConcurrent,
    load: w.load,
    draining: w.draining,
    connected_at: w.connectedAt,
    last_seen_at: w.lastSeenAt,
    ...(w.cacheStats ? { cache_stats: { ...w.cacheStats } } : {}),
    health,
  };
}
