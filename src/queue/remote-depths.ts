/** A queue's depths per provider and per tenant, as a replica publishes them (cluster mode). */
export interface QueueDepths {
  providers: Record<string, number>;
  tenants: Record<string, number>;
  /** Observed drain rate per provider, requests per ms (Retry-After advice counts the cluster's). */
  rates?: Record<string, number>;
}

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

  /** A replica's latest depths (undefined: it left, or has nothing waiting). */
  set(replica: string, depths: QueueDepths | undefined): void {
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
    this.providers = new Map();
    this.tenants = new Map();
    this.rates = new Map();
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
  return providers && tenants && rates ? { providers, tenants, rates } : undefined;
}

/** Numbers by name: whole depths (`whole`) or rates (at most 1 per ms, a million requests per second). */
function counts(v: unknown, whole: boolean): Record<string, number> | undefined {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return undefined;
  const entries = Object.entries(v as Record<string, unknown>);
  if (entries.length > MAX_ENTRIES) return undefined;
  const out: Record<string, number> = {};
  for (const [k, n] of entries) {
    if (k.length > 512 || typeof n !== 'number' || !Number.isFinite(n) || n <= 0) continue;
    out[k] = whole ? Math.min(MAX_DEPTH, Math.floor(n)) : Math.min(1000, n);
  }
  return out;
}
