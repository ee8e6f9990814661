import type { ApiKeyRecord } from './api-key-store';

/** What one enabled key adds to its tenant: the time it stops working (Infinity: never). */
interface Contribution {
  tenant: string;
  until: number;
}

interface TenantKeys {
  /** Enabled keys that never expire: while any exists the tenant has an active key. */
  forever: number;
  /** Enabled keys with an expiry, by id. */
  expiring: Map<string, number>;
  /** The latest expiry in `expiring` (-Infinity when empty). */
  latest: number;
}

/**
 * Which tenants have at least one active key: such a tenant is reached only with one of its keys,
 * even while keys are not required (docs/tenancy.md, "Tenants with keys"). Kept incrementally per
 * tenant (a count of keys that never expire, and the latest expiry of the others), so a key change
 * costs O(1) — O(that tenant's keys) only when the key with the latest expiry goes — and loading N
 * keys costs O(N), not a pass over every key per key. The request path asks one Map lookup and one
 * comparison, and a key's expiry needs no timer: past that time the tenant simply has no active
 * key any more.
 */
export class KeyedTenants {
  private readonly byKey = new Map<string, Contribution>();
  private readonly byTenant = new Map<string, TenantKeys>();

  /** Records a key as it now is (added, changed, enabled or revoked). */
  put(record: ApiKeyRecord): void {
    this.drop(record.id);
    if (!record.enabled) return;
    const until = record.expiresAt ?? Infinity;
    this.byKey.set(record.id, { tenant: record.tenant, until });
    let t = this.byTenant.get(record.tenant);
    if (!t) this.byTenant.set(record.tenant, (t = { forever: 0, expiring: new Map(), latest: -Infinity }));
    if (until === Infinity) t.forever++;
    else {
      t.expiring.set(record.id, until);
      t.latest = Math.max(t.latest, until);
    }
  }

  /** Forgets a key (deleted); a key not recorded is ignored. */
  drop(id: string): void {
    const c = this.byKey.get(id);
    if (!c) return;
    this.byKey.delete(id);
    const t = this.byTenant.get(c.tenant)!;
    if (c.until === Infinity) t.forever--;
    else {
      t.expiring.delete(id);
      // Only losing the latest expiry needs a look at the tenant's other keys (admin path).
      if (c.until === t.latest) {
        t.latest = -Infinity;
        for (const until of t.expiring.values()) if (until > t.latest) t.latest = until;
      }
    }
    if (t.forever === 0 && t.expiring.size === 0) this.byTenant.delete(c.tenant);
  }

  hasActiveKey(tenant: string, now: number): boolean {
    const t = this.byTenant.get(tenant);
    return t !== undefined && (t.forever > 0 || t.latest > now);
  }
}
