/** Whose requests a cap counts: one API key's, or one tenant's. */
export type CapScope = 'key' | 'tenant';

/**
 * `max_concurrent` of one key or tenant: how many of its requests may be on workers at once.
 * Requests beyond it wait in the queue, in the fair order (docs/routing.md#concurrency-caps).
 */
export class ConcurrencyCap<T = unknown> {
  /** Its requests on workers now. */
  inFlight = 0;
  /** Its requests waiting in the queue, oldest first (a Set keeps insertion order). */
  readonly waiting = new Set<T>();

  constructor(
    readonly scope: CapScope,
    readonly id: string,
    /** The tenant it belongs to (a tenant's cap: itself). */
    readonly tenant: string,
    /** Replaced when the key's or tenant's setting changes (the next request brings the new value). */
    public limit: number,
  ) {}

  get full(): boolean {
    return this.inFlight >= this.limit;
  }
}

/** `x-concurrency-limit` and `x-concurrency-in-flight` of a request: the cap with the least room. */
export function concurrencyHeaders(caps: readonly ConcurrencyCap[]): Record<string, string> | undefined {
  let tightest: ConcurrencyCap | undefined;
  for (const cap of caps) if (!tightest || cap.limit - cap.inFlight < tightest.limit - tightest.inFlight) tightest = cap;
  if (!tightest) return undefined;
  return { 'x-concurrency-limit': String(tightest.limit), 'x-concurrency-in-flight': String(tightest.inFlight) };
}

/** One cap as `/admin/usage` shows it. */
export interface CapView {
  scope: CapScope;
  id: string;
  tenant: string;
  limit: number;
  in_flight: number;
  waiting: number;
}

/**
 * The caps of the keys and tenants that have `max_concurrent`, by scope and id. Only configured
 * caps exist (tenant ids come from clients, so nothing is kept for the others); a cap whose limit
 * went away is dropped once nothing of it is in flight or waiting.
 */
export class ConcurrencyCaps<T = unknown> {
  private readonly caps = new Map<string, ConcurrencyCap<T>>();

  /**
   * The caps a request counts against: its key's and its tenant's, where set. Allocation-free when
   * neither has a limit (the common case).
   */
  capsFor(tenant: string, tenantLimit: number | undefined, keyId?: string, keyLimit?: number | null): ConcurrencyCap<T>[] | undefined {
    const key = keyId !== undefined && keyLimit != null ? this.cap('key', keyId, tenant, keyLimit) : undefined;
    const ten = tenantLimit != null ? this.cap('tenant', tenant, tenant, tenantLimit) : undefined;
    if (key && ten) return [key, ten];
    if (key) return [key];
    if (ten) return [ten];
    return undefined;
  }

  /** Caps, optionally of one tenant (its own and its keys') or one key: `/admin/usage` (O(caps), operators only). */
  list(filter: { tenant?: string; key?: string } = {}): CapView[] {
    const out: CapView[] = [];
    for (const c of this.caps.values()) {
      if (filter.tenant !== undefined && c.tenant !== filter.tenant) continue;
      if (filter.key !== undefined && !(c.scope === 'key' && c.id === filter.key)) continue;
      out.push({ scope: c.scope, id: c.id, tenant: c.tenant, limit: c.limit, in_flight: c.inFlight, waiting: c.waiting.size });
    }
    return out.sort((a, b) => a.scope.localeCompare(b.scope) || a.id.localeCompare(b.id));
  }

  /** A key or tenant lost its limit (or was deleted): its cap goes once it is idle. */
  forget(scope: CapScope, id: string): void {
    const c = this.caps.get(`${scope}:${id}`);
    if (c && c.inFlight === 0 && c.waiting.size === 0) this.caps.delete(`${scope}:${id}`);
  }

  private cap(scope: CapScope, id: string, tenant: string, limit: number): ConcurrencyCap<T> {
    const name = `${scope}:${id}`;
    let c = this.caps.get(name);
    if (!c) this.caps.set(name, (c = new ConcurrencyCap<T>(scope, id, tenant, limit)));
    else c.limit = limit;
    return c;
  }
}
