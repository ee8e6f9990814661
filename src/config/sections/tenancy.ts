import { checkNumber, Env, Yaml } from '../../common/config-reader';
import { custom, group } from '../setting';
import { parsePriority, Priority, PRIORITIES } from '../../common/priority';

/** One tenant's limits and queueing settings; absent fields mean "no limit" / the defaults. */
export interface TenantSettings {
  /** Requests per minute. */
  rpm?: number;
  /** Tokens (prompt + completion) per minute. */
  tpm?: number;
  tokensPerDay?: number;
  /** Priority of requests that send no `x-priority` (default `normal`). */
  priority?: Priority;
  /** The highest priority its requests may ask for (default `high`). */
  maxPriority?: Priority;
  /** How many of its requests may wait in the queue at once. */
  maxQueued?: number;
  /** How many of its requests may be on workers at once; more wait in the queue (docs/routing.md#concurrency-caps). */
  maxConcurrent?: number;
  /** Models it may use (after alias resolution); absent = all. */
  models?: string[];
  /** The most tokens one task session may spend (a task's `budget.tokens` is capped by it). */
  sessionTokens?: number;
  /** The most seconds one task session may run (a task's `budget.time_secs` is capped by it). */
  sessionTimeSecs?: number;
  /**
   * Pools (provider names) its requests may reach; absent = every pool. Its requests never go to
   * another pool's workers, which keeps a team's prompts on its own hardware.
   */
  pools?: string[];
}

export interface TenancyConfig {
  /** Tenants from the config file and `TENANT_RATE_LIMIT_<tenant>`. */
  tenants: Map<string, TenantSettings>;
  /**
   * Settings of tenants not listed (`DEFAULT_RATE_LIMIT` or `TENANT_RATE_LIMIT_default`;
   * `tenants.default` in the config file is a tenant like any other).
   */
  defaults: TenantSettings;
}

/** Tenant ids: what `x-tenant-id` may carry and what configuration may name. */
export const TENANT_ID = /^[A-Za-z0-9._-]{1,64}$/;

const TENANT_KEYS = [
  'rpm',
  'tpm',
  'tokens_per_day',
  'priority',
  'max_priority',
  'max_queued',
  'max_concurrent',
  'models',
  'session_tokens',
  'session_time_secs',
  'pools',
];
const RATE = /^\s*(\d+)\s*(req|tok)\s*\/\s*min\s*$/i;

/** The `tenants:` section (a top-level key) and the rate-limit variables; a reload applies them. */
export const TENANCY_SETTINGS = group('', 'tenancy', {
  tenants: custom({
    yaml: 'tenants',
    reload: 'live',
    fields: ['tenants'],
    docDefault: 'none',
    doc: 'settings per tenant id (`rpm`, `tpm`, `tokens_per_day`, `priority`, `max_priority`, `max_queued`, `max_concurrent`, `models`, `session_tokens`, `session_time_secs`, `pools`): see [Tenants and keys](#tenants-and-keys) and [tenancy.md](tenancy.md)',
  }),
  tenantRateLimit: custom({
    env: 'TENANT_RATE_LIMIT_<tenant>',
    reload: 'live',
    fields: ['tenants'],
    docDefault: 'none',
    doc: "`100req/min`, `5000tok/min` or both (comma-separated) for one tenant; `TENANT_RATE_LIMIT_default` (the seed's spelling) is the fallback for tenants not configured, like `DEFAULT_RATE_LIMIT` ([tenancy.md](tenancy.md))",
  }),
  defaultRateLimit: custom({
    env: 'DEFAULT_RATE_LIMIT',
    reload: 'live',
    fields: ['defaults'],
    docDefault: 'none',
    doc: 'the same for tenants not configured (synonym: `TENANT_RATE_LIMIT_default`)',
  }),
});
const S = TENANCY_SETTINGS.settings;
const RATE_LIMIT_PREFIX = S.tenantRateLimit.env!.replace('<tenant>', '');

/**
 * Reads the `tenants:` section, `TENANT_RATE_LIMIT_<tenant>=100req/min` (also `tok/min`, several
 * separated by commas) and `DEFAULT_RATE_LIMIT`. Problems are pushed to `problems`.
 */
export function readTenancyConfig(env: Env, section: unknown, problems: string[]): TenancyConfig {
  const tenants = new Map<string, TenantSettings>();
  if (section !== undefined && section !== null) {
    if (typeof section !== 'object' || Array.isArray(section)) problems.push('tenants (config file) must be a mapping of tenant id: settings');
    else {
      for (const [id, raw] of Object.entries(section as Yaml)) {
        if (!TENANT_ID.test(id)) problems.push(`tenants.${id}: tenant ids are 1-64 characters of A-Z a-z 0-9 . _ -`);
        tenants.set(id, parseTenantSettings(raw, `tenants.${id}`, problems));
      }
    }
  }
  for (const [name, value] of Object.entries(env)) {
    if (!name.startsWith(RATE_LIMIT_PREFIX) || value === undefined || value === '') continue;
    const id = name.slice(RATE_LIMIT_PREFIX.length);
    // The seed's spelling of the fallback, read below with DEFAULT_RATE_LIMIT: not a tenant named `default`.
    if (id === FALLBACK_TENANT) continue;
    if (!TENANT_ID.test(id)) {
      problems.push(`${name}: "${id}" is not a tenant id (1-64 characters of A-Z a-z 0-9 . _ -)`);
      continue;
    }
    tenants.set(id, { ...tenants.get(id), ...parseRates(value, name, problems) });
  }
  return { tenants, defaults: readDefaults(env, problems) };
}

/** `TENANT_RATE_LIMIT_default`: the seed's name for the settings of tenants without an entry. */
const FALLBACK_TENANT = 'default';

/** `DEFAULT_RATE_LIMIT` or its synonym `TENANT_RATE_LIMIT_default`; both set, they must agree. */
function readDefaults(env: Env, problems: string[]): TenantSettings {
  const defaultEnv = S.defaultRateLimit.env!;
  const seedEnv = RATE_LIMIT_PREFIX + FALLBACK_TENANT;
  const own = env[defaultEnv];
  const seed = env[seedEnv];
  if (own && seed && own.trim() !== seed.trim()) {
    problems.push(`${defaultEnv} and ${seedEnv} are synonyms (the fallback for tenants without settings) and differ: set one`);
  }
  if (own) return parseRates(own, defaultEnv, problems);
  return seed ? parseRates(seed, seedEnv, problems) : {};
}

/** `100req/min`, `5000tok/min`, or both separated by a comma. */
function parseRates(value: string, source: string, problems: string[]): TenantSettings {
  const out: TenantSettings = {};
  for (const part of value.split(',')) {
    const m = RATE.exec(part);
    if (!m) {
      problems.push(`${source} must look like 100req/min or 5000tok/min (comma-separated), got "${value}"`);
      continue;
    }
    if (m[2].toLowerCase() === 'req') out.rpm = Number(m[1]);
    else out.tpm = Number(m[1]);
  }
  return out;
}

/** One tenant's settings from YAML or an admin API body (snake_case keys). */
export function parseTenantSettings(raw: unknown, where: string, problems: string[]): TenantSettings {
  const out: TenantSettings = {};
  if (raw === null || raw === undefined) return out;
  if (typeof raw !== 'object' || Array.isArray(raw)) {
    problems.push(`${where} must be a mapping of ${TENANT_KEYS.join(', ')}`);
    return out;
  }
  const o = raw as Yaml;
  const count = (key: string, min = 0) => {
    if (o[key] === undefined || o[key] === null) return undefined;
    const before = problems.length;
    // Bounded so every value fits a BIGINT column and a JS number exactly.
    const n = checkNumber(o[key], `${where}.${key}`, 0, { min, max: Number.MAX_SAFE_INTEGER, integer: true }, problems);
    return problems.length === before ? n : undefined;
  };
  const priority = (key: string) => {
    if (o[key] === undefined || o[key] === null) return undefined;
    const p = parsePriority(o[key]);
    if (!p) problems.push(`${where}.${key} must be one of ${PRIORITIES.join(', ')}`);
    return p;
  };
  for (const key of Object.keys(o)) if (!TENANT_KEYS.includes(key)) problems.push(`${where}.${key} is not a tenant setting (known: ${TENANT_KEYS.join(', ')})`);
  out.rpm = count('rpm');
  out.tpm = count('tpm');
  out.tokensPerDay = count('tokens_per_day');
  out.maxQueued = count('max_queued');
  out.maxConcurrent = count('max_concurrent', 1);
  out.sessionTokens = count('session_tokens');
  out.sessionTimeSecs = count('session_time_secs');
  out.priority = priority('priority');
  out.maxPriority = priority('max_priority');
  if (o.models !== undefined && o.models !== null) {
    if (Array.isArray(o.models) && o.models.every((m) => typeof m === 'string' && m.trim() !== '')) out.models = (o.models as string[]).map((m) => m.trim());
    else problems.push(`${where}.models must be a list of model names`);
  }
  if (o.pools !== undefined && o.pools !== null) {
    // An empty list would silently make every request of the tenant fail: refused instead.
    if (Array.isArray(o.pools) && o.pools.length > 0 && o.pools.every((p) => typeof p === 'string' && p.trim() !== ''))
      out.pools = [...new Set((o.pools as string[]).map((p) => p.trim()))];
    else problems.push(`${where}.pools must be a non-empty list of pool (provider) names`);
  }
  for (const k of Object.keys(out) as Array<keyof TenantSettings>) if (out[k] === undefined) delete out[k];
  return out;
}
