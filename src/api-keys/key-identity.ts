import type { IncomingHttpHeaders } from 'node:http';
import { Errors, GatewayError } from '../common/gateway-error';
import { ClientIdentity, poolsOf, PRIORITY_HEADER, resolvePriority, TENANT_HEADER } from '../tenancy/client-identity';
import type { Priority } from '../common/priority';
import { TENANT_ID, TenantSettings } from '../config/sections/tenancy';

/** What identification needs from an authenticated key. */
export interface IdentifyingKey {
  id: string;
  tenant: string;
  priority: Priority | null;
  models: readonly string[] | null;
  rpm: number | null;
  tpm: number | null;
  maxConcurrent?: number | null;
}

/**
 * The identity of a request authenticated by an API key: the key's tenant (an `x-tenant-id`
 * naming another tenant is refused, 403 `tenant_mismatch`), `x-priority` or else the key's
 * priority or else the tenant's, capped at the tenant's `max_priority`, and the models both the key
 * and the tenant allow.
 */
export function identifyByKey(
  key: IdentifyingKey,
  headers: IncomingHttpHeaders,
  settingsOf: (tenant: string) => TenantSettings,
): ClientIdentity | GatewayError {
  const claimed = single(headers[TENANT_HEADER]);
  if (claimed !== undefined && claimed !== '' && claimed !== key.tenant) {
    if (!TENANT_ID.test(claimed)) return Errors.invalidRequest('x-tenant-id must be 1-64 characters of A-Z a-z 0-9 . _ -', TENANT_HEADER);
    return new GatewayError(
      'tenant_mismatch',
      `This API key belongs to tenant '${key.tenant}'; x-tenant-id '${claimed}' cannot override it (send the key's tenant or no x-tenant-id)`,
      { param: TENANT_HEADER },
    );
  }
  const settings = settingsOf(key.tenant);
  const priority = resolvePriority(single(headers[PRIORITY_HEADER]), key.priority ?? settings.priority, settings.maxPriority);
  if (priority instanceof GatewayError) return priority;
  const identity: ClientIdentity = {
    tenant: key.tenant,
    priority,
    allowedModels: allowedModels(key.models, settings.models),
    allowedPools: poolsOf(settings),
    keyId: key.id,
  };
  if (key.maxConcurrent != null) identity.keyMaxConcurrent = key.maxConcurrent;
  if (key.rpm !== null || key.tpm !== null) {
    identity.keyLimits = {};
    if (key.rpm !== null) identity.keyLimits.rpm = key.rpm;
    if (key.tpm !== null) identity.keyLimits.tpm = key.tpm;
  }
  return identity;
}

/** The intersection of the key's and the tenant's lists; undefined when neither restricts. */
export function allowedModels(keyModels: readonly string[] | null | undefined, tenantModels: readonly string[] | undefined): ReadonlySet<string> | undefined {
  if (!keyModels && !tenantModels) return undefined;
  if (!keyModels) return new Set(tenantModels);
  if (!tenantModels) return new Set(keyModels);
  const tenant = new Set(tenantModels);
  return new Set(keyModels.filter((m) => tenant.has(m)));
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
