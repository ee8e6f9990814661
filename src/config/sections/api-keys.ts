import { Env, Reader, TIMER, Yaml } from '../../common/config-reader';
import type { Priority } from '../../tenancy/priority';
import { KEY_FIELD_NAMES, parseKeyFields } from '../../api-keys/api-key-fields';
import { SHA256_HEX } from '../../api-keys/api-key-material';

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

/** Top-level YAML keys this reader owns (loadConfig reports the others it does not know). */
export const API_KEYS_YAML_KEYS = [
  'require_api_keys',
  'keys',
  'api_key_last_used_flush_secs',
  'client_auth_failure_limit',
  'client_auth_failure_window_secs',
  'client_auth_block_secs',
];

const CONFIG_KEY_NAME = /^[A-Za-z0-9._-]{1,60}$/;
const CONFIG_KEY_FIELDS = [...KEY_FIELD_NAMES, 'key_sha256'];

/**
 * `REQUIRE_API_KEYS` (alias `MODELRELAY_REQUIRE_API_KEYS`), the write-behind period, the client
 * auth-failure limiter and the `keys:` section of the config file (`file` is the top-level mapping,
 * `server:` merged in). Problems are pushed to `problems`.
 */
export function readApiKeysConfig(env: Env, file: Yaml, problems: string[]): ApiKeysConfig {
  const r = new Reader(env, file);
  const requireEnv = env.REQUIRE_API_KEYS ? 'REQUIRE_API_KEYS' : env.MODELRELAY_REQUIRE_API_KEYS ? 'MODELRELAY_REQUIRE_API_KEYS' : 'REQUIRE_API_KEYS';
  const config: ApiKeysConfig = {
    requireApiKeys: r.bool(requireEnv, 'require_api_keys', false),
    keys: readConfiguredKeys(file.keys, problems),
    lastUsedFlushIntervalMs: r.seconds('API_KEY_LAST_USED_FLUSH_SECS', 'api_key_last_used_flush_secs', 10, TIMER),
    authLimiter: {
      maxFailures: r.number('CLIENT_AUTH_FAILURE_LIMIT', 'client_auth_failure_limit', 20, { min: 1, integer: true }),
      windowMs: r.seconds('CLIENT_AUTH_FAILURE_WINDOW_SECS', 'client_auth_failure_window_secs', 60, TIMER),
      blockMs: r.seconds('CLIENT_AUTH_BLOCK_SECS', 'client_auth_block_secs', 60, TIMER),
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
