import { checkNumber, NumberOpts, toMillis, Yaml } from '../../common/config-reader';
import { isWellFormedSecretHash } from '../../common/secret-hash';
import type { ProviderConfig, ProviderDefaults } from '../app-config';
import { parseCapabilityDeclarations, readTranslation, ROUTING_SETTINGS } from './routing';
import { PROVIDER_DEFAULT_SETTINGS } from './server';
import { bool, custom, group, num, secs, str, yamlKeys } from '../setting';

const PROVIDER_DEFAULTS = PROVIDER_DEFAULT_SETTINGS.settings;
const ROUTING = ROUTING_SETTINGS.settings;

/** The keys of one `providers[]` entry; the numeric ones default to the global values (PROVIDER_DEFAULT_SETTINGS). */
export const PROVIDER_ENTRY_SETTINGS = group('providers[]', '', {
  name: custom({
    yaml: 'name',
    reload: 'live',
    fields: [],
    docDefault: 'required',
    table: 'providers',
    doc: 'the provider (pool) name, `[A-Za-z0-9][A-Za-z0-9._-]{0,63}`, unique in the file; workers join it with `?provider=<name>`',
  }),
  secret: custom({
    yaml: 'secret',
    reload: 'live',
    fields: [],
    docDefault: 'none',
    table: 'providers',
    doc: "the workers' secret, a string (quote it); hashed at boot, never stored in clear. A new secret applies to the next worker that connects",
  }),
  secretHash: custom({
    yaml: 'secret_hash',
    reload: 'live',
    fields: [],
    docDefault: 'none',
    table: 'providers',
    doc: 'the secret as `switchboard hash-secret` prints it (`printf %s "$SECRET" | npx switchboard hash-secret`: `scrypt$N$r$p$salt$key`), so the file need not hold it in clear',
  }),
  enabled: bool({
    yaml: 'enabled',
    default: true,
    reload: 'live',
    fields: [],
    table: 'providers',
    doc: '`false`: workers are refused, requests get `503 provider_disabled`',
  }),
  maxQueueLen: num({
    yaml: 'max_queue_len',
    default: PROVIDER_DEFAULTS.maxQueueLen.default,
    opts: PROVIDER_DEFAULTS.maxQueueLen.opts,
    reload: 'live',
    fields: [],
    docDefault: '`MAX_QUEUE_LEN`',
    table: 'providers',
    doc: "the provider's queue bound",
  }),
  queueTimeout: secs({
    yaml: 'queue_timeout_secs',
    default: PROVIDER_DEFAULTS.queueTimeout.default,
    opts: PROVIDER_DEFAULTS.queueTimeout.opts,
    reload: 'live',
    fields: [],
    docDefault: '`QUEUE_TIMEOUT_SECS`',
    table: 'providers',
    doc: 'how long its requests may wait in the queue',
  }),
  requestTimeout: secs({
    yaml: 'request_timeout_secs',
    default: PROVIDER_DEFAULTS.requestTimeout.default,
    opts: PROVIDER_DEFAULTS.requestTimeout.opts,
    reload: 'live',
    fields: [],
    docDefault: '`REQUEST_TIMEOUT_SECS`',
    table: 'providers',
    doc: "its requests' whole lifetime, queue time included",
  }),
  firstByteTimeout: secs({
    yaml: 'first_byte_timeout_secs',
    default: ROUTING.firstByteTimeout.default,
    opts: ROUTING.firstByteTimeout.opts,
    reload: 'live',
    fields: [],
    docDefault: '`routing.first_byte_timeout_secs`',
    table: 'providers',
    doc: 'its own first-byte watchdog timeout ([routing.md](routing.md#watchdogs)), e.g. 300 for backends that load models on demand; applies to requests a worker takes after a reload',
  }),
  maxModels: num({
    yaml: 'max_models',
    default: PROVIDER_DEFAULTS.maxModelsPerWorker.default,
    opts: PROVIDER_DEFAULTS.maxModelsPerWorker.opts,
    reload: 'live',
    fields: [],
    docDefault: '`MAX_MODELS_PER_WORKER`',
    table: 'providers',
    doc: 'models one of its workers may register',
  }),
  models: custom({
    yaml: 'models',
    reload: 'live',
    fields: [],
    docDefault: 'none',
    table: 'providers',
    doc: 'exact names and `*` globs: the allow-list of its workers ([model ownership](routing.md#model-ownership)); exact names are also declared: requests queue for them before a worker connects; a model listed here belongs to the providers listing it; none = any model nobody lists',
  }),
  priority: num({
    yaml: 'priority',
    default: 50,
    opts: { min: 0, integer: true },
    reload: 'live',
    fields: [],
    docDefault: 'none',
    table: 'providers',
    doc: 'routing priority floor, lower is preferred: a worker may declare a larger number, never a smaller one; unset, its workers rank themselves',
  }),
  capabilities: custom({
    yaml: 'capabilities',
    reload: 'live',
    fields: [],
    docDefault: 'none',
    table: 'providers',
    doc: 'per model, `{vision, tools, json_mode, context_length}`; each declared field overrides what the workers advertise',
  }),
  costPerGpuHour: num({
    yaml: 'cost_per_gpu_hour',
    default: 0,
    opts: { min: 0 },
    reload: 'live',
    fields: [],
    docDefault: 'none',
    table: 'providers',
    doc: 'GPU-time chargeback: the price of one GPU for an hour (any currency); `/admin/usage` reports `cost` from it ([chargeback](enterprise.md#gpu-time-chargeback))',
  }),
  translation: str({
    yaml: 'translation',
    reload: 'live',
    fields: [],
    docDefault: '`routing.translation`',
    table: 'providers',
    doc: '`auto` or `never`: whether `/v1/messages` and `/v1/responses` requests may reach its workers translated to chat completions ([agents.md](agents.md))',
  }),
  gpusPerWorker: num({
    yaml: 'gpus_per_worker',
    default: 1,
    opts: { above: 0 },
    reload: 'live',
    fields: [],
    docDefault: '1',
    table: 'providers',
    doc: "GPUs behind each of its workers: a request's slot is a `1 / max_concurrent` share of them",
  }),
});
const S = PROVIDER_ENTRY_SETTINGS.settings;
const PROVIDER_KEYS = new Set(yamlKeys(PROVIDER_ENTRY_SETTINGS));

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
    const optional = (key: string, opts: NumberOpts) =>
      p[key] === undefined || p[key] === null ? undefined : checkNumber(p[key], `${at}.${key}`, 0, opts, problems);
    const seconds = (key: string, opts: NumberOpts) => {
      const value = optional(key, opts);
      return value === undefined ? undefined : toMillis(value, `${at}.${key}`, opts, problems);
    };
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
      maxQueueLen: num(S.maxQueueLen.yaml!, defaults.maxQueueLen, S.maxQueueLen.opts),
      queueTimeoutMs: toMillis(
        num(S.queueTimeout.yaml!, defaults.queueTimeoutMs / 1000, S.queueTimeout.opts),
        `${at}.${S.queueTimeout.yaml}`,
        S.queueTimeout.opts,
        problems,
      ),
      requestTimeoutMs: toMillis(
        num(S.requestTimeout.yaml!, defaults.requestTimeoutMs / 1000, S.requestTimeout.opts),
        `${at}.${S.requestTimeout.yaml}`,
        S.requestTimeout.opts,
        problems,
      ),
      firstByteTimeoutMs: seconds(S.firstByteTimeout.yaml!, S.firstByteTimeout.opts),
      maxModelsPerWorker: num(S.maxModels.yaml!, defaults.maxModelsPerWorker, S.maxModels.opts),
      models: Array.isArray(models)
        ? models
            .filter((m): m is string => typeof m === 'string')
            .map((m) => m.trim())
            .filter(Boolean)
        : [],
      priority:
        p.priority === undefined || p.priority === null ? undefined : checkNumber(p.priority, `${at}.priority`, S.priority.default, S.priority.opts, problems),
      capabilities: parseCapabilityDeclarations(p.capabilities, `${at}.capabilities`, problems),
      costPerGpuHour: optional(S.costPerGpuHour.yaml!, S.costPerGpuHour.opts),
      gpusPerWorker: optional(S.gpusPerWorker.yaml!, S.gpusPerWorker.opts),
      translation: p.translation === undefined || p.translation === null ? undefined : readTranslation(String(p.translation), `${at}.translation`, problems),
    });
  });
  const seen = new Set<string>();
  for (const p of out) {
    if (seen.has(p.name)) problems.push(`providers: "${p.name}" is declared twice`);
    seen.add(p.name);
  }
  return out;
}
