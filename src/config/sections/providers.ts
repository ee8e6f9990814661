import { checkNumber, NumberOpts, TIMER, toMillis, Yaml } from '../../common/config-reader';
import { isWellFormedSecretHash } from '../../common/secret-hash';
import type { ProviderConfig, ProviderDefaults } from '../app-config';
import { parseCapabilityDeclarations } from './routing';

/** The keys of one `providers[]` entry (the defaults of the numeric ones: PROVIDER_DEFAULT_SETTINGS). */
const PROVIDER_KEYS = new Set([
  'name',
  'secret',
  'secret_hash',
  'enabled',
  'max_queue_len',
  'queue_timeout_secs',
  'request_timeout_secs',
  'max_models',
  'models',
  'priority',
  'capabilities',
]);

/** Provider names, in the file and `PROVIDER_NAME`. */
export const PROVIDER_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** The `providers:` list of the file; each entry's unset limits come from `defaults`. */
export function readProviders(file: Yaml, defaults: ProviderDefaults, problems: string[]): ProviderConfig[] {
  const list = file.providers;
  if (list === undefined || list === null) return [];
  if (!Array.isArray(list)) {
    problems.push('providers (config file) must be a list');
    return [];
  }
  const out: ProviderConfig[] = [];
  list.forEach((entry, i) => {
    const at = `providers[${i}]`;
    if (!entry || typeof entry !== 'object' || Array.isArray(entry)) {
      problems.push(`${at} must be a mapping`);
      return;
    }
    const p = entry as Yaml;
    const name = typeof p.name === 'string' ? p.name : '';
    if (!PROVIDER_NAME.test(name)) problems.push(`${at}.name must match ${PROVIDER_NAME.source}`);
    for (const key of Object.keys(p)) if (!PROVIDER_KEYS.has(key)) problems.push(`${at}.${key} is not a provider setting`);
    if (p.secret !== undefined && p.secret !== null && typeof p.secret !== 'string') problems.push(`${at}.secret must be a string (quote it)`);
    const secret = typeof p.secret === 'string' && p.secret !== '' ? p.secret : undefined;
    const secretHash = typeof p.secret_hash === 'string' && p.secret_hash !== '' ? p.secret_hash : undefined;
    if (p.secret_hash !== undefined && p.secret_hash !== null && !(secretHash && isWellFormedSecretHash(secretHash))) {
      problems.push(`${at}.secret_hash must be a hash printed by \`switchboard hash-secret\` (scrypt$N$r$p$salt$key)`);
    }
    const num = (key: string, fallback: number, opts: NumberOpts) =>
      p[key] === undefined || p[key] === null ? fallback : checkNumber(p[key], `${at}.${key}`, fallback, opts, problems);
    const models = p.models === undefined || p.models === null ? [] : p.models;
    if (!Array.isArray(models) || !models.every((m) => typeof m === 'string')) {
      problems.push(`${at}.models must be a list of strings`);
    }
    if (p.enabled !== undefined && typeof p.enabled !== 'boolean') problems.push(`${at}.enabled must be true or false`);
    out.push({
      name,
      secret,
      secretHash,
      enabled: p.enabled !== false,
      maxQueueLen: num('max_queue_len', defaults.maxQueueLen, { min: 0, integer: true }),
      queueTimeoutMs: toMillis(num('queue_timeout_secs', defaults.queueTimeoutMs / 1000, TIMER), `${at}.queue_timeout_secs`, TIMER, problems),
      requestTimeoutMs: toMillis(num('request_timeout_secs', defaults.requestTimeoutMs / 1000, TIMER), `${at}.request_timeout_secs`, TIMER, problems),
      maxModelsPerWorker: num('max_models', defaults.maxModelsPerWorker, { min: 1, integer: true }),
      models: Array.isArray(models) ? models.filter((m): m is string => typeof m === 'string').map((m) => m.trim()).filter(Boolean) : [],
      priority: p.priority === undefined || p.priority === null ? undefined : checkNumber(p.priority, `${at}.priority`, 50, { min: 0, integer: true }, problems),
      capabilities: parseCapabilityDeclarations(p.capabilities, `${at}.capabilities`, problems),
    });
  });
  const seen = new Set<string>();
  for (const p of out) {
    if (seen.has(p.name)) problems.push(`providers: "${p.name}" is declared twice`);
    seen.add(p.name);
  }
  return out;
}
