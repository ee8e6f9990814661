import { parsePriority, Priority, PRIORITIES } from '../../common/priority';
import { TENANT_ID } from './tenancy';

/**
 * A key's settings as read from the config file (`keys:`) or an admin API body: snake_case names,
 * every problem reported at once. `null` (where allowed) clears a setting.
 */
export interface KeyFields {
  name?: string;
  tenant?: string;
  rpm?: number | null;
  tpm?: number | null;
  /** How many of its requests may be on workers at once (at least 1). */
  maxConcurrent?: number | null;
  priority?: Priority | null;
  models?: string[] | null;
  /** Epoch milliseconds. */
  expiresAt?: number | null;
  enabled?: boolean;
}

export interface KeyFieldRules {
  /** snake_case fields that may appear; others are reported. */
  allowed: readonly string[];
  required?: readonly string[];
  /** Whether `null` clears a setting (PATCH); otherwise `null` is the same as absent. */
  nullClears?: boolean;
  /** When set, `expires_at` must lie after this instant. */
  notExpiredAt?: number;
  /** Stricter pattern for names (config-file keys derive their id from the name). */
  namePattern?: { regex: RegExp; description: string };
}

export const KEY_FIELD_NAMES = ['name', 'tenant', 'rpm', 'tpm', 'max_concurrent', 'priority', 'models', 'expires_at', 'enabled'] as const;

const MAX_NAME = 128;
const MAX_MODELS = 1000;
const MAX_MODEL_NAME = 256;
const CONTROL = /[\x00-\x1f\x7f]/;
/** `2026-12-31` (UTC midnight) or a date-time with a time zone (`Z` or `+02:00`). */
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}(?:[Tt ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:[Zz]|[+-]\d{2}:?\d{2}))?$/;

/**
 * Reads the fields of one key. `where` prefixes every message (`keys[0].` for the config file,
 * '' for an API body).
 */
export function parseKeyFields(raw: unknown, where: string, rules: KeyFieldRules, problems: string[]): KeyFields {
  const out: KeyFields = {};
  if (raw === null || raw === undefined || typeof raw !== 'object' || Array.isArray(raw)) {
    problems.push(where ? `${where.replace(/\.$/, '')} must be a mapping of ${rules.allowed.join(', ')}` : 'Request body must be a JSON object');
    return out;
  }
  const o = raw as Record<string, unknown>;
  for (const key of Object.keys(o)) {
    if (!rules.allowed.includes(key)) problems.push(`${where}${key} is not a key setting (known: ${rules.allowed.join(', ')})`);
  }
  for (const key of rules.required ?? []) {
    if (o[key] === undefined || o[key] === null) problems.push(`${where}${key} is required`);
  }
  const present = (key: string) => rules.allowed.includes(key) && o[key] !== undefined && (o[key] !== null || rules.nullClears);
  const isNull = (key: string) => o[key] === null;

  if (present('name')) {
    const v = o.name;
    if (typeof v !== 'string' || v.trim() === '' || v.trim().length > MAX_NAME || CONTROL.test(v)) {
      problems.push(`${where}name must be 1-${MAX_NAME} characters without control characters`);
    } else if (rules.namePattern && !rules.namePattern.regex.test(v.trim())) {
      problems.push(`${where}name must be ${rules.namePattern.description}`);
    } else out.name = v.trim();
  }
  if (present('tenant')) {
    const v = o.tenant;
    if (typeof v !== 'string' || !TENANT_ID.test(v)) problems.push(`${where}tenant must be a tenant id: 1-64 characters of A-Z a-z 0-9 . _ -`);
    else out.tenant = v;
  }
  for (const key of ['rpm', 'tpm'] as const) {
    if (!present(key)) continue;
    if (isNull(key)) {
      out[key] = null;
      continue;
    }
    const v = o[key];
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) problems.push(`${where}${key} must be an integer >= 0, got ${JSON.stringify(v)}`);
    else out[key] = v;
  }
  if (present('max_concurrent')) {
    const v = o.max_concurrent;
    if (v === null) out.maxConcurrent = null;
    else if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1)
      problems.push(`${where}max_concurrent must be an integer >= 1, got ${JSON.stringify(v)}`);
    else out.maxConcurrent = v;
  }
  if (present('priority')) {
    if (isNull('priority')) out.priority = null;
    else {
      const p = parsePriority(o.priority);
      if (!p) problems.push(`${where}priority must be one of ${PRIORITIES.join(', ')}`);
      else out.priority = p;
    }
  }
  if (present('models')) {
    const v = o.models;
    if (v === null) out.models = null;
    else if (
      !Array.isArray(v) ||
      v.length === 0 ||
      v.length > MAX_MODELS ||
      !v.every((m) => typeof m === 'string' && m.trim() !== '' && m.length <= MAX_MODEL_NAME && !CONTROL.test(m))
    ) {
      problems.push(`${where}models must be a list of 1-${MAX_MODELS} model names (leave it out${rules.nullClears ? ' or send null' : ''} for every model)`);
    } else out.models = [...new Set((v as string[]).map((m) => m.trim()))];
  }
  if (present('expires_at')) {
    const v = o.expires_at;
    if (v === null) out.expiresAt = null;
    else {
      const at = v instanceof Date ? v.getTime() : typeof v === 'string' && ISO_INSTANT.test(v.trim()) ? Date.parse(v.trim()) : NaN;
      if (!Number.isFinite(at)) problems.push(`${where}expires_at must be an ISO 8601 date or date-time with a time zone, e.g. 2026-12-31T00:00:00Z`);
      else if (rules.notExpiredAt !== undefined && at <= rules.notExpiredAt) problems.push(`${where}expires_at must be in the future`);
      else out.expiresAt = at;
    }
  }
  if (present('enabled')) {
    if (typeof o.enabled !== 'boolean') problems.push(`${where}enabled must be true or false`);
    else out.enabled = o.enabled;
  }
  return out;
}

/** `key_sha256` in the config file: 64 hex digits. */
export const SHA256_HEX = /^[0-9a-fA-F]{64}$/;
