import { Errors } from '../common/gateway-error';
import { parseJsonObject } from '../tenancy/json-object';
import { KEY_FIELD_NAMES, KeyFields, parseKeyFields } from '../config/sections/api-key-fields';
import type { ApiKeyRecord } from './api-key-store';
import type { KeyStatus } from './api-keys.service';

/**
 * Bodies of `/admin/keys` (snake_case like the config file's `keys:`), validated with the same
 * rules as the file; every problem is reported in one 400.
 *
 *   POST  {name, tenant, rpm?, tpm?, max_concurrent?, priority?, models?, expires_at?, enabled?}
 *   PATCH any of those; null clears rpm, tpm, max_concurrent, priority, models, expires_at
 */
export type CreateKeyInput = KeyFields & { name: string; tenant: string };

export function parseCreateKeyBody(raw: unknown, now: number): CreateKeyInput {
  const problems: string[] = [];
  const fields = parseKeyFields(parseJsonObject(raw), '', { allowed: KEY_FIELD_NAMES, required: ['name', 'tenant'], notExpiredAt: now }, problems);
  if (problems.length > 0) throw Errors.invalidRequest(problems.join('; '));
  return fields as CreateKeyInput;
}

export function parseUpdateKeyBody(raw: unknown, now: number): KeyFields {
  const problems: string[] = [];
  const fields = parseKeyFields(parseJsonObject(raw), '', { allowed: KEY_FIELD_NAMES, nullClears: true, notExpiredAt: now }, problems);
  if (problems.length > 0) throw Errors.invalidRequest(problems.join('; '));
  return fields;
}

/** A key as the admin API shows it: never the key, never its hash. */
export function describeKey(r: ApiKeyRecord, status: KeyStatus) {
  return {
    id: r.id,
    name: r.name,
    tenant: r.tenant,
    /** `sb-` + 8 characters; null for keys from the config file (only their hash is known). */
    prefix: r.prefix || null,
    source: r.source,
    enabled: r.enabled,
    status,
    rpm: r.rpm,
    tpm: r.tpm,
    max_concurrent: r.maxConcurrent ?? null,
    priority: r.priority,
    models: r.models,
    expires_at: iso(r.expiresAt),
    created_at: iso(r.createdAt),
    last_used_at: iso(r.lastUsedAt),
    revoked_at: iso(r.revokedAt),
  };
}

function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}
