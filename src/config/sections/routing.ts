import { checkNumber, Env, Reader, TIMER, Yaml } from '../../common/config-reader';
import { bool, custom, group, num, read, secs, str, yamlKeys } from '../setting';
import { CAPABILITY_FIELDS, CAPABILITY_FLAGS, CapabilityFlag, ModelCapabilities } from '../../protocol';
import { AffinityConfig, readAffinityConfig, readExposeWorkerHeader } from './routing-affinity';
import { AliasTable, aliasPatternsOf, checkAliasesAndFallbacks, modelName, readAliases, readFallbacks } from './routing-aliases';

export { resolveAlias } from './routing-aliases';

/** `routing.translation`: whether a request may be translated for a worker that lacks its endpoint (translate/). */
export const TRANSLATION_MODES = ['auto', 'never'] as const;
export type TranslationMode = (typeof TRANSLATION_MODES)[number];

/** Routing strategies a configuration may name (routing/strategies.ts implements them). */
export const STRATEGY_NAMES = ['smart', 'round_robin', 'priority_only', 'random'] as const;
export type StrategyName = (typeof STRATEGY_NAMES)[number];

/** Weights of the smart strategy's score; they sum to 100 (validated when the config is read). */
export interface ScoringWeights {
  priority: number;
  load: number;
  latency: number;
}

export const DEFAULT_WEIGHTS: ScoringWeights = { priority: 50, load: 30, latency: 20 };

/** How workers failing before the first byte are ejected (applied by routing/worker-health.ts). */
export interface EjectionPolicy {
  /** Failures before the first byte, in a row, that eject a worker. */
  ejectAfterFailures: number;
  /** First ejection's length; doubles for each ejection in a row. */
  cooldownMs: number;
  maxCooldownMs: number;
}

/** The `routing:` section of the config file and its `ROUTING_*` environment variables. */
export interface RoutingConfig extends AliasTable {
  strategy: StrategyName;
  weights: ScoringWeights;
  /**
   * `auto`: a `/v1/messages` or `/v1/responses` request no worker serves natively is translated for
   * a chat-completions worker (`/v1/messages/count_tokens` for a `/tokenize` one); `never`: it is not.
   */
  translation: TranslationMode;
  allowPinning: boolean;
  ejection: EjectionPolicy;
  /** `routing.affinity`: cache affinity with bounded loads. */
  affinity: AffinityConfig;
  /** `routing.expose_worker_header`: responses name their worker in `x-switchboard-worker`. */
  exposeWorkerHeader: boolean;
  /** `routing.max_retries`, when set: overrides MAX_REQUEUES (the same limit). */
  maxRetries?: number;
  /** First-byte watchdog: a worker silent this long after taking a request loses it (requeued). */
  firstByteTimeoutMs: number;
  /** Deprecated alias of `providers[].first_byte_timeout_secs`: pool name → its first-byte timeout, for a pool that sets none. */
  firstByteTimeoutMsByPool: Map<string, number>;
  /** Stall watchdog: a started stream with no chunk for this long ends with a retriable error. */
  streamIdleTimeoutMs: number;
  /** Tolerated oddities, logged at boot (an unknown strategy falls back to smart). */
  warnings: string[];
}

/** The `routing:` section; every key but `max_retries` is applied by a reload. */
export const ROUTING_SETTINGS = group('routing', 'routing', {
  strategy: str({
    env: 'ROUTING_STRATEGY',
    yaml: 'strategy',
    default: 'smart',
    reload: 'live',
    fields: ['strategy', 'warnings'],
    doc: '`smart`, `round_robin`, `priority_only` or `random` ([routing.md](routing.md#strategies)); an unknown name logs a warning and uses `smart`',
  }),
  weights: custom({
    yaml: 'weights',
    reload: 'live',
    fields: ['weights'],
    docDefault: '`{priority: 50, load: 30, latency: 20}`',
    doc: 'smart score weights, integers summing to 100 (file only)',
  }),
  aliases: custom({
    env: 'ROUTING_ALIASES',
    yaml: 'aliases',
    reload: 'live',
    fields: ['aliases', 'aliasPatterns'],
    docDefault: 'none',
    doc: 'alias → model (single level); an alias ending in `*` is a pattern matching every name that starts with what precedes it (`claude-*: qwen3-coder`; the longest matching prefix wins, an exact alias wins over any pattern); the variable reads `gpt-4=llama3:70b,gpt-3.5-turbo=llama3:8b` and wins per alias',
  }),
  fallbacks: custom({
    env: 'ROUTING_FALLBACKS',
    yaml: 'fallbacks',
    reload: 'live',
    fields: ['fallbacks'],
    docDefault: 'none',
    doc: 'model → fallback models, tried in order when the model has no eligible worker; the variable reads `llama3:70b=llama3:8b,mistral:7b;m2=m3`',
  }),
  translation: str({
    env: 'ROUTING_TRANSLATION',
    yaml: 'translation',
    default: 'auto',
    reload: 'live',
    fields: ['translation'],
    doc: '`auto`: a `/v1/messages` or `/v1/responses` request that no eligible worker serves natively is translated to chat completions for a worker that serves those (native workers are preferred); `never`: such requests only go to native workers. Pools can refuse translation with `providers[].translation: never` ([agents.md](agents.md))',
  }),
  allowPinning: bool({
    env: 'ROUTING_ALLOW_PINNING',
    yaml: 'allow_pinning',
    default: true,
    reload: 'live',
    fields: ['allowPinning'],
    doc: 'honour `x-switchboard-provider`',
  }),
  maxRetries: num({
    env: 'ROUTING_MAX_RETRIES',
    yaml: 'max_retries',
    default: 3,
    opts: { min: 0, integer: true },
    reload: 'restart',
    fields: ['maxRetries'],
    doc: 'the requeue limit: the same setting as `MAX_REQUEUES`, which it overrides when set',
  }),
  ejectAfterFailures: num({
    env: 'ROUTING_EJECT_AFTER_FAILURES',
    yaml: 'eject_after_failures',
    default: 3,
    opts: { min: 1, integer: true },
    reload: 'live',
    fields: ['ejection.ejectAfterFailures'],
    doc: 'failures before the first byte, in a row, that eject a worker ([routing.md](routing.md))',
  }),
  ejectCooldown: secs({
    env: 'ROUTING_EJECT_COOLDOWN_SECS',
    yaml: 'eject_cooldown_secs',
    default: 30,
    opts: TIMER,
    reload: 'live',
    fields: ['ejection.cooldownMs'],
    doc: "first ejection's length; each further ejection in a row doubles it",
  }),
  ejectMaxCooldown: secs({
    env: 'ROUTING_EJECT_MAX_COOLDOWN_SECS',
    yaml: 'eject_max_cooldown_secs',
    default: 300,
    opts: TIMER,
    reload: 'live',
    fields: ['ejection.maxCooldownMs'],
    doc: 'the doubling stops here (at least `eject_cooldown_secs`)',
  }),
  firstByteTimeout: secs({
    env: 'ROUTING_FIRST_BYTE_TIMEOUT_SECS',
    yaml: 'first_byte_timeout_secs',
    default: 120,
    opts: TIMER,
    reload: 'restart',
    fields: ['firstByteTimeoutMs'],
    doc: 'a worker that sent no `response_start`, chunk or completion this long after taking a request is sent `cancel` (`timeout`), charged a health failure, and the request goes to another worker ([routing.md](routing.md#watchdogs))',
  }),
  firstByteTimeoutPerPool: custom({
    yaml: 'first_byte_timeout_secs_per_pool',
    reload: 'restart',
    fields: ['firstByteTimeoutMsByPool'],
    docDefault: 'none',
    doc: 'deprecated: set `providers[].first_byte_timeout_secs` (or the admin API field) instead. Pool (provider) name → its own `first_byte_timeout_secs` (file only), used for a pool that sets none of its own',
  }),
  streamIdleTimeout: secs({
    env: 'ROUTING_STREAM_IDLE_TIMEOUT_SECS',
    yaml: 'stream_idle_timeout_secs',
    default: 60,
    opts: TIMER,
    reload: 'restart',
    fields: ['streamIdleTimeoutMs'],
    doc: 'a started stream with no chunk this long is cancelled on its worker (charged a health failure) and ends with a retriable `DECODE_TIMEOUT` SSE error event ([routing.md](routing.md#watchdogs))',
  }),
});
const S = ROUTING_SETTINGS.settings;
const ROUTING_KEYS = yamlKeys(ROUTING_SETTINGS);
const WEIGHT_KEYS = ['priority', 'load', 'latency'] as const;

export function defaultRoutingConfig(): RoutingConfig {
  return readRoutingConfig({}, undefined, []);
}

/** Reads and validates routing settings; every problem is pushed to `problems`. */
export function readRoutingConfig(env: Env, section: unknown, problems: string[]): RoutingConfig {
  let yaml: Yaml = {};
  if (section !== undefined && section !== null) {
    if (typeof section === 'object' && !Array.isArray(section)) yaml = section as Yaml;
    else problems.push('routing (config file) must be a mapping');
  }
  const r = new Reader(env, yaml, 'routing', [...ROUTING_KEYS, 'affinity']);
  const warnings: string[] = [];

  const strategyName = read(r, env, S.strategy).trim().toLowerCase();
  let strategy: StrategyName = 'smart';
  if ((STRATEGY_NAMES as readonly string[]).includes(strategyName)) strategy = strategyName as StrategyName;
  else warnings.push(`unknown routing strategy "${strategyName}": using "smart" (known: ${STRATEGY_NAMES.join(', ')})`);

  const config: RoutingConfig = {
    strategy,
    weights: readWeights(yaml.weights, problems),
    aliases: readAliases(env[S.aliases.env!], yaml.aliases, problems),
    aliasPatterns: [],
    translation: readTranslation(read(r, env, S.translation), 'routing.translation', problems),
    fallbacks: readFallbacks(env[S.fallbacks.env!], yaml.fallbacks, problems),
    allowPinning: read(r, env, S.allowPinning),
    ejection: {
      ejectAfterFailures: read(r, env, S.ejectAfterFailures),
      cooldownMs: read(r, env, S.ejectCooldown),
      maxCooldownMs: read(r, env, S.ejectMaxCooldown),
    },
    firstByteTimeoutMs: read(r, env, S.firstByteTimeout),
    firstByteTimeoutMsByPool: readPoolTimeouts(yaml[S.firstByteTimeoutPerPool.yaml!], `routing.${S.firstByteTimeoutPerPool.yaml}`, problems),
    streamIdleTimeoutMs: read(r, env, S.streamIdleTimeout),
    affinity: readAffinityConfig(env, yaml.affinity, strategy, problems),
    exposeWorkerHeader: readExposeWorkerHeader(r, env),
    warnings,
  };
  if (env[S.maxRetries.env!] || yaml[S.maxRetries.yaml!] !== undefined) {
    config.maxRetries = read(r, env, S.maxRetries);
  }
  if (config.ejection.maxCooldownMs < config.ejection.cooldownMs) {
    problems.push('routing.eject_max_cooldown_secs must be at least routing.eject_cooldown_secs');
  }
  config.aliasPatterns = aliasPatternsOf(config.aliases);
  checkAliasesAndFallbacks(config, problems);
  for (const key of r.unknownKeys())
    problems.push(`routing.${key} (config file) is not a routing setting (known: ${[...ROUTING_KEYS, 'affinity', 'expose_worker_header'].join(', ')})`);
  problems.push(...r.problems);
  return config;
}

/** `auto` or `never` (any case); anything else is a problem and reads as `auto`. */
export function readTranslation(value: string, where: string, problems: string[]): TranslationMode {
  const mode = value.trim().toLowerCase();
  if ((TRANSLATION_MODES as readonly string[]).includes(mode)) return mode as TranslationMode;
  problems.push(`${where} must be one of ${TRANSLATION_MODES.join(', ')}, got "${value.slice(0, 64)}"`);
  return 'auto';
}

/** `{pool: seconds}` → milliseconds by pool name. */
function readPoolTimeouts(value: unknown, where: string, problems: string[]): Map<string, number> {
  const out = new Map<string, number>();
  if (value === undefined || value === null) return out;
  if (typeof value !== 'object' || Array.isArray(value)) {
    problems.push(`${where} must be a mapping of pool name: seconds`);
    return out;
  }
  for (const [pool, secs] of Object.entries(value as Yaml)) {
    const before = problems.length;
    const n = checkNumber(secs, `${where}.${pool}`, 0, TIMER, problems);
    if (problems.length === before) out.set(pool, n * 1000);
  }
  return out;
}

function readWeights(value: unknown, problems: string[]): ScoringWeights {
  if (value === undefined || value === null) return { ...DEFAULT_WEIGHTS };
  if (typeof value !== 'object' || Array.isArray(value)) {
    problems.push('routing.weights must be a mapping of priority, load, latency');
    return { ...DEFAULT_WEIGHTS };
  }
  const raw = value as Yaml;
  const weights = { ...DEFAULT_WEIGHTS };
  for (const key of Object.keys(raw)) {
    if (!(WEIGHT_KEYS as readonly string[]).includes(key)) problems.push(`routing.weights.${key} is not a weight (known: ${WEIGHT_KEYS.join(', ')})`);
  }
  let valid = true;
  for (const key of WEIGHT_KEYS) {
    const v = raw[key];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > 100) {
      problems.push(`routing.weights.${key} must be an integer from 0 to 100, got "${String(v)}"`);
      valid = false;
      continue;
    }
    weights[key] = v;
  }
  const sum = weights.priority + weights.load + weights.latency;
  if (valid && sum !== 100) {
    problems.push(`routing.weights must sum to 100 (priority ${weights.priority} + load ${weights.load} + latency ${weights.latency} = ${sum})`);
  }
  return weights;
}

/** `vision, tools, json_mode, context_length`: the declared fields, as the messages below name them. */
const KNOWN = CAPABILITY_FIELDS.join(', ');

/**
 * Per-model capability declarations of a provider (config file or admin API), which override what
 * its workers advertise: `{model: {vision?, tools?, json_mode?, context_length?}}`.
 */
export function parseCapabilityDeclarations(value: unknown, where: string, problems: string[]): Record<string, ModelCapabilities> {
  const out: Record<string, ModelCapabilities> = {};
  if (value === undefined || value === null) return out;
  if (typeof value !== 'object' || Array.isArray(value)) {
    problems.push(`${where} must be a mapping of model: {${KNOWN}}`);
    return out;
  }
  for (const [model, raw] of Object.entries(value as Yaml)) {
    const at = `${where}.${model}`;
    if (!modelName(model)) problems.push(`${at}: model names must be non-empty and at most 256 characters`);
    // Assigned below as a key: this one would set the mapping's prototype instead.
    if (model.trim() === '__proto__') {
      problems.push(`${at}: "__proto__" cannot name a model`);
      continue;
    }
    if (!raw || typeof raw !== 'object' || Array.isArray(raw)) {
      problems.push(`${at} must be a mapping of ${KNOWN}`);
      continue;
    }
    const caps: ModelCapabilities = {};
    for (const [key, v] of Object.entries(raw as Yaml)) {
      if ((CAPABILITY_FLAGS as readonly string[]).includes(key)) {
        if (typeof v === 'boolean') caps[key as CapabilityFlag] = v;
        else problems.push(`${at}.${key} must be true or false`);
      } else if (key === 'context_length') {
        if (typeof v === 'number' && Number.isInteger(v) && v > 0) caps.context_length = v;
        else problems.push(`${at}.context_length must be a positive integer`);
      } else problems.push(`${at}.${key} is not a capability (known: ${KNOWN})`);
    }
    out[model.trim()] = caps;
  }
  return out;
}
