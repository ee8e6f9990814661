/** Tenants whose last turn is remembered; beyond it, the oldest idle ones are forgotten. */
const TENANT_TURNS_KEPT = 4096;

/** A tenant never served: before every served one. */
export const NEVER = -Infinity;

interface Turn {
  /** When it was served (this replica's clock, never decreasing). */
  at: number;
  /** Which turn it was here: breaks ties between turns of the same millisecond. */
  seq: number;
}

/**
 * When each tenant was last served from a queue (within a priority level, tenants take turns: the
 * one served least recently goes first). Its own turns exactly; in cluster mode also the other
 * replicas' (as last published, converted to this replica's clock on receipt), so every replica
 * orders tenants on the same data: a tenant's turn is its latest anywhere.
 */
export class TenantTurns {
  /** Least recently served first (a served tenant is moved to the end). */
  private readonly local = new Map<string, Turn>();
  private remote = new Map<string, number>();
  private seqNo = 0;
  private lastAt = NEVER;

  /** A request of `tenant` left the queue for a worker; `idle` says which tenants have nothing waiting. */
  served(tenant: string, now: number, idle: (tenant: string) => boolean): void {
    // Kept even when the tenant has nothing left waiting: a tenant that keeps one request queued at
    // a time must not come back as "never served" and jump every backlog. A clock stepping back
    // cannot put a later turn before an earlier one.
    this.lastAt = Math.max(now, this.lastAt);
    // Moved to the end (most recent); a tenant served again reuses its record (nothing allocated).
    const turn = this.local.get(tenant) ?? { at: 0, seq: 0 };
    this.local.delete(tenant);
    turn.at = this.lastAt;
    turn.seq = ++this.seqNo;
    this.local.set(tenant, turn);
    if (this.local.size > TENANT_TURNS_KEPT) this.forgetIdle(idle);
  }

  /** When the tenant was last served, here or (cluster mode) at another replica; NEVER if not known. */
  at(tenant: string): number {
    const here = this.local.get(tenant)?.at ?? NEVER;
    if (this.remote.size === 0) return here;
    return Math.max(here, this.remote.get(tenant) ?? NEVER);
  }

  /** Breaks ties between equal `at`: the order of this replica's own turns (0 = none here). */
  seq(tenant: string): number {
    return this.local.get(tenant)?.seq ?? 0;
  }

  /** The other replicas' latest turn per tenant (this replica's clock): replaces what was known. */
  setRemote(turns: Map<string, number>): void {
    this.remote = turns;
  }

  /** This replica's `max` most recent turns, as ms ago (what it publishes; durations survive clock skew). */
  recent(now: number, max: number): Record<string, number> {
    const out: Record<string, number> = {};
    let skip = this.local.size - max;
    for (const [tenant, turn] of this.local) {
      if (skip-- > 0) continue;
      out[tenant] = Math.max(0, now - turn.at);
    }
    return out;
  }

  /** Turns of tenants with nothing waiting, oldest first, until the map is back to half its bound. */
  private forgetIdle(idle: (tenant: string) => boolean): void {
    for (const tenant of this.local.keys()) {
      if (this.local.size <= TENANT_TURNS_KEPT / 2) return;
      if (idle(tenant)) this.local.delete(tenant);
    }
  }
}
