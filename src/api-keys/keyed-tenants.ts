import type { ApiKeyRecord } from './api-key-store';

/**
 * Which tenants have at least one active key: such a tenant is reached only with one of its keys,
 * even while keys are not required (docs/tenancy.md, "Tenants with keys"). Kept per tenant as the
 * time its last enabled key stops working (Infinity when one never expires), recomputed on every
 * key change, so the request path asks one Map lookup and one comparison, and a key's expiry needs
 * no timer: past that time the tenant simply has no active key any more.
 */
export class KeyedTenants {
  private readonly activeUntil = new Map<string, number>();

  /** Recomputes `tenant` from the keys now indexed (admin path: a pass over the keys). */
  refresh(tenant: string, keys: Iterable<ApiKeyRecord>): void {
    let until = -Infinity;
    for (const k of keys) {
      if (k.tenant !== tenant || !k.enabled) continue;
      until = Math.max(until, k.expiresAt ?? Infinity);
    }
    if (until === -Infinity) this.activeUntil.delete(tenant);
    else this.activeUntil.set(tenant, until);
  }

  hasActiveKey(tenant: string, now: number): boolean {
    const until = this.activeUntil.get(tenant);
    return until !== undefined && until > now;
  }
}
