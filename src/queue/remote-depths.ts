/** A queue's depths per provider and per tenant, as a replica publishes them (cluster mode). */
export interface QueueDepths {
  providers: Record<string, number>;
  tenants: Record<string, number>;
  /** Observed drain rate per provider, requests per ms (Retry-After advice counts the cluster's). */
  rates?: Record<string, number>;
  /** Per model, how long the oldest request of each priority level (0 high … 2 low) has waited, ms; null = none. */
  heads?: Record<string, Array<number | null>>;
}

/** Within this margin, requests that arrived at different replicas count as arriving together. */
export const CLUSTER_ORDER_SLACK_MS = 50;

const MAX_ENTRIES = 4096;
const MAX_DEPTH = 1_000_000;

/**
 * What the other replicas' queues hold, as each last published it (cluster mode): the queue bounds
 * (`max_queue_len` per pool, a tenant's `max_queued`) count the whole cluster. Empty in one process.
 */
export class RemoteDepths {
  private readonly byReplica = new Map<string, QueueDepths>();
  private providers = new Map<string, number>();
  private tenants = new Map<string, number>();
  private rates = new Map<string, number>();
  /** Per replica, per model: when (this replica's clock) the oldest request of each level arrived there. */
  private readonly arrivals = new Map<string, Map<string, number[]>>();

  /** A replica's latest depths (undefined: it left, or has nothing waiting). */
  set(replica: string, depths: QueueDepths | undefined, now = 0): void {
    this.setHeads(replica, depths?.heads, now);
    if (depths) this.byReplica.set(replica, depths);
    else if (!this.byReplica.delete(replica)) return;
    this.providers = new Map();
    this.tenants = new Map();
    this.rates = new Map();
    for (const d of this.byReplica.values()) {
      add(this.providers, d.providers);
      add(this.tenants, d.tenants);
      if (d.rates) add(this.rates, d.rates);
    }
  }

  clear(): void {
    this.byReplica.clear();
    this.arrivals.clear();
    this.providers = new Map();
    this.tenants = new Map();
    this.rates = new Map();
  }

  /** Whether any other replica has requests waiting (one size check on the pull path). */
  get waiting(): boolean {
    return this.arrivals.size > 0;
  }

  /** Whether another replica has a request for `model`, of `priority` or a higher one, waiting since before `before`. */
  waitingSince(model: string, priority: number, before: number): boolean {
    if (this.arrivals.size === 0) return false;
    for (const byModel of this.arrivals.values()) {
      const levels = byModel.get(model);
      if (!levels) continue;
      for (let level = 0; level <= priority && level < levels.length; level++) if (levels[level] < before) return true;
    }
    return false;
  }

  private setHeads(replica: string, heads: QueueDepths['heads'], now: number): void {
    if (!heads || Object.keys(heads).length === 0) {
      this.arrivals.delete(replica);
      return;
    }
    const byModel = new Map<string, number[]>();
    for (const [model, waited] of Object.entries(heads))
      byModel.set(
        model,
        waited.map((w) => (w === null ? Infinity : now - w)),
      );
    this.arrivals.set(replica, byModel);
  }

  /** The other replicas' drain rate for a provider, requests per ms. */
  rate(provider: string): number {
    return this.rates.size === 0 ? 0 : (this.rates.get(provider) ?? 0);
  }

  provider(name: string): number {
    return this.providers.size === 0 ? 0 : (this.providers.get(name) ?? 0);
  }

  tenant(name: string): number {
    return this.tenants.size === 0 ? 0 : (this.tenants.get(name) ?? 0);
  }
}

function add(into: Map<string, number>, from: Record<string, number>): void {
  for (const [k, n] of Object.entries(from)) into.set(k, (into.get(k) ?? 0) + n);
}

/** Published depths read back: plain non-negative whole numbers by name, bounded; undefined if malformed. */
export function readQueueDepths(raw: unknown): QueueDepths | undefined {
  if (!raw || typeof raw !== 'object') return undefined;
  const o = raw as Record<string, unknown>;
  const providers = counts(o.providers, true);
  const tenants = counts(o.tenants, true);
  const rates = o.rates === undefined ? {} : counts(o.rates, false);
  const heads = o.heads === undefined ? {} : readHeads(o.heads);
  return providers && tenants && rates && heads ? { providers, tenants, rates, heads } : undefined;
}

function readHeads(v: unknown): Record<string, Array<number | null>> | undefined {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return undefined;
  const entries = Object.entries(v as Record<string, unknown>);
  if (entries.length > MAX_ENTRIES) return undefined;
  const out: Record<string, Array<number | null>> = {};
  for (const [model, levels] of entries) {
    if (model.length > 512 || model === '__proto__' || !Array.isArray(levels) || levels.length > 3) continue;
    out[model] = levels.map((w) => (typeof w === 'number' && Number.isFinite(w) && w >= 0 ? Math.min(w, 86_400_000) : null));
  }
  return out;
}

/** Numbers by name: whole depths (`whole`) or rates (at most 1 per ms, a million requests per second). */
function counts(v: unknown, whole: boolean): Record<string, number> | undefined {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return undefined;
  const entries = Object.entries(v as Record<string, unknown>);
  if (entries.length > MAX_ENTRIES) return undefined;
  const out: Record<string, number> = {};
  for (const [k, n] of entries) {
    if (k.length > 512 || k === '__proto__' || typeof n !== 'number' || !Number.isFinite(n) || n <= 0) continue;
    out[k] = whole ? Math.min(MAX_DEPTH, Math.floor(n)) : Math.min(1000, n);
  }
  return out;
}
