import { Env, Reader, TIMER, Yaml } from '../../common/config-reader';
import { bool, custom, group, num, read, secs, yamlKeys } from '../setting';
import type { Priority } from '../../common/priority';
import { KEY_FIELD_NAMES, parseKeyFields, SHA256_HEX } from './api-key-fields';

/** A key declared in the config file's `keys:` section: only its SHA-256 is known. */
export interface ConfiguredApiKey {
  /** `[A-Za-z0-9._-]{1,60}`; the key's id is `cfg_<name>`. */
  name: string;
  tenant: string;
  /** Lower-case hex. */
  keySha256: string;
  enabled: boolean;
  rpm?: number;
  tpm?: number;
  maxConcurrent?: number;
  priority?: Priority;
  models?: string[];
  /** Epoch milliseconds. */
  expiresAt?: number;
}

export interface ApiKeysConfig {
  /** `REQUIRE_API_KEYS`: every inference route and `GET /v1/models` needs a key. */
  requireApiKeys: boolean;
  keys: ConfiguredApiKey[];
  /** `last_used_at` is written behind, for all keys used meanwhile in one statement, on this period. */
  lastUsedFlushIntervalMs: number;
  /** Failed key authentications from one client address before it is refused for `blockMs`. */
  authLimiter: { maxFailures: number; windowMs: number; blockMs: number };
}

/** Top-level keys (`server:` merged in), the `keys:` list included. */
export const API_KEYS_SETTINGS = group('', 'apiKeys', {
  requireApiKeys: bool({
    env: 'REQUIRE_API_KEYS',
    aliases: ['MODELRELAY_REQUIRE_API_KEYS'],
    yaml: 'require_api_keys',
    default: false,
    reload: 'restart',
    fields: ['requireApiKeys'],
    doc: 'every inference route and `GET /v1/models` need a client API key (`Authorization: Bearer <key>` or `x-api-key: <key>`), else `401 invalid_api_key`; see [tenancy.md](tenancy.md#client-api-keys)',
  }),
  keys: custom({
    yaml: 'keys',
    reload: 'restart',
    fields: ['keys'],
    docDefault: 'none',
    doc: 'client API keys declared in the file, by their SHA-256 (`name`, `tenant`, `key_sha256`, optional `rpm`, `tpm`, `max_concurrent`, `priority`, `models`, `expires_at`, `enabled`): see [Tenants and keys](#tenants-and-keys)',
  }),
  lastUsedFlush: secs({
    env: 'API_KEY_LAST_USED_FLUSH_SECS',
    yaml: 'api_key_last_used_flush_secs',
    default: 10,
    opts: TIMER,
    reload: 'restart',
    fields: ['lastUsedFlushIntervalMs'],
    doc: "write-behind period of the keys' `last_used_at` (one statement per period for all keys used meanwhile)",
  }),
  authFailureLimit: num({
    env: 'CLIENT_AUTH_FAILURE_LIMIT',
    yaml: 'client_auth_failure_limit',
    default: 20,
    opts: { min: 1, integer: true },
    reload: 'restart',
    fields: ['authLimiter.maxFailures'],
    doc: 'unknown API keys from one client address before it is refused (`429 auth_rate_limited`)',
  }),
  authFailureWindow: secs({
    env: 'CLIENT_AUTH_FAILURE_WINDOW_SECS',
    yaml: 'client_auth_failure_window_secs',
    default: 60,
    opts: TIMER,
    reload: 'restart',
    fields: ['authLimiter.windowMs'],
    doc: 'window in which those failures are counted',
  }),
  authBlock: secs({
    env: 'CLIENT_AUTH_BLOCK_SECS',
    yaml: 'client_auth_block_secs',
    default: 60,
    opts: TIMER,
    reload: 'restart',
    fields: ['authLimiter.blockMs'],
    doc: 'how long the address is refused for unknown keys (a valid key is always accepted)',
  }),
});
const S = API_KEYS_SETTINGS.settings;
/** Top-level YAML keys this reader owns (loadConfig reports the others it does not know). */
export const API_KEYS_YAML_KEYS = yamlKeys(API_KEYS_SETTINGS);

const CONFIG_KEY_NAME = /^[A-Za-z0-9._-]{1,60}$/;
const CONFIG_KEY_FIELDS = [...KEY_FIELD_NAMES, 'key_sha256'];

/**
 * `REQUIRE_API_KEYS` (alias `MODELRELAY_REQUIRE_API_KEYS`), the write-behind period, the client
 * auth-failure limiter and the `keys:` section of the config file (`file` is the top-level mapping,
 * `server:` merged in). Problems are pushed to `problems`.
 */
export function readApiKeysConfig(env: Env, file: Yaml, problems: string[]): ApiKeysConfig {
  const r = new Reader(env, file);
  const config: ApiKeysConfig = {
    requireApiKeys: read(r, env, S.requireApiKeys),
    keys: readConfiguredKeys(file.keys, problems),
    lastUsedFlushIntervalMs: read(r, env, S.lastUsedFlush),
    authLimiter: {
      maxFailures: read(r, env, S.authFailureLimit),
      windowMs: read(r, env, S.authFailureWindow),
      blockMs: read(r, env, S.authBlock),
    },
  };
  problems.push(...r.problems);
  return config;
}

function readConfiguredKeys(section: unknown, problems: string[]): ConfiguredApiKey[] {
  if (section === undefined || section === null) return [];
  if (!Array.isArray(section)) {
    problems.push('keys (config file) must be a list of {name, tenant, key_sha256, ...}');
    return [];
  }
  const out: ConfiguredApiKey[] = [];
  section.forEach((entry, i) => {
    const at = `keys[${i}].`;
    const before = problems.length;
    const fields = parseKeyFields(
      entry,
      at,
      {
        allowed: CONFIG_KEY_FIELDS,
        required: ['name', 'tenant', 'key_sha256'],
        namePattern: { regex: CONFIG_KEY_NAME, description: '1-60 characters of A-Z a-z 0-9 . _ - (the key id is cfg_<name>)' },
      },
      problems,
    );
    const hash = entry && typeof entry === 'object' ? (entry as Yaml).key_sha256 : undefined;
    if (hash !== undefined && hash !== null && (typeof hash !== 'string' || !SHA256_HEX.test(hash))) {
      problems.push(`${at}key_sha256 must be the key's SHA-256 as 64 hex digits (printf %s "$KEY" | sha256sum), never the key itself`);
    }
    if (problems.length > before || typeof hash !== 'string') return;
    out.push({
      name: fields.name!,
      tenant: fields.tenant!,
      keySha256: hash.toLowerCase(),
      enabled: fields.enabled ?? true,
      ...(fields.rpm != null ? { rpm: fields.rpm } : {}),
      ...(fields.tpm != null ? { tpm: fields.tpm } : {}),
      ...(fields.maxConcurrent != null ? { maxConcurrent: fields.maxConcurrent } : {}),
      ...(fields.priority ? { priority: fields.priority } : {}),
      ...(fields.models ? { models: fields.models } : {}),
      ...(fields.expiresAt != null ? { expiresAt: fields.expiresAt } : {}),
    });
  });
  const names = new Set<string>();
  const hashes = new Set<string>();
  for (const k of out) {
    if (names.has(k.name)) problems.push(`keys: "${k.name}" is declared twice`);
    if (hashes.has(k.keySha256)) problems.push(`keys: "${k.name}" has the same key_sha256 as another key`);
    names.add(k.name);
    hashes.add(k.keySha256);
  }
  return out;
}
