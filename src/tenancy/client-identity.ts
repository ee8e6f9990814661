import type { IncomingHttpHeaders } from 'node:http';
import { Errors, GatewayError } from '../common/gateway-error';
import { levelOf, parsePriority, Priority, PriorityLevel } from '../common/priority';
import { TENANT_ID, TenantSettings } from '../config/sections/tenancy';

/** Who is calling, as far as routing, admission and the queue are concerned. */
export interface ClientIdentity {
  tenant: string;
  /** Queue level: 0 (high) … 2 (low), already capped by what the caller may ask for. */
  priority: PriorityLevel;
  /** Models the caller may use (after alias resolution); undefined = all. */
  allowedModels?: ReadonlySet<string>;
  /** Pools (provider names) its tenant may use (`tenants.<t>.pools`); undefined = all. */
  allowedPools?: ReadonlySet<string>;
  /** The client API key the caller presented (its id, never the key). */
  keyId?: string;
  /** The key's own limits, beside its tenant's. */
  keyLimits?: { rpm?: number; tpm?: number };
  /** The key's `max_concurrent`, when it has one (see ConcurrencyGate). */
  keyMaxConcurrent?: number;
}

export const TENANT_HEADER = 'x-tenant-id';
export const PRIORITY_HEADER = 'x-priority';

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/**
 * The tenant named by `x-tenant-id` (validated; default `default`) with the priority of
 * `x-priority` (default: the tenant's `priority`, else normal), capped at the tenant's
 * `max_priority`. Bad values are a clear 400, never a silent default.
 */
export function identifyByHeaders(headers: IncomingHttpHeaders, settingsOf: (tenant: string) => TenantSettings): ClientIdentity | GatewayError {
  const rawTenant = single(headers[TENANT_HEADER]);
  let tenant = 'default';
  if (rawTenant !== undefined && rawTenant !== '') {
    if (!TENANT_ID.test(rawTenant)) {
      return Errors.invalidRequest('x-tenant-id must be 1-64 characters of A-Z a-z 0-9 . _ -', TENANT_HEADER);
    }
    tenant = rawTenant;
  }
  const settings = settingsOf(tenant);
  const priority = resolvePriority(single(headers[PRIORITY_HEADER]), settings.priority, settings.maxPriority);
  if (priority instanceof GatewayError) return priority;
  return { tenant, priority, allowedModels: settings.models ? new Set(settings.models) : undefined, allowedPools: poolsOf(settings) };
}

/** The tenant's pools as a set; undefined = every pool. */
export function poolsOf(settings: TenantSettings): ReadonlySet<string> | undefined {
  return settings.pools ? new Set(settings.pools) : undefined;
}

/** The requested priority (or the default), never above the ceiling. */
export function resolvePriority(requested: string | undefined, fallback: Priority | undefined, ceiling: Priority | undefined): PriorityLevel | GatewayError {
  let level = levelOf(fallback ?? 'normal');
  if (requested !== undefined && requested !== '') {
    const p = parsePriority(requested);
    if (!p) return Errors.invalidRequest('x-priority must be high, normal or low', PRIORITY_HEADER);
    level = levelOf(p);
  }
  const floor = levelOf(ceiling ?? 'high');
  return (level < floor ? floor : level) as PriorityLevel;
}
