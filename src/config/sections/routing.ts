import { checkNumber, Env, Reader, TIMER, Yaml } from '../../common/config-reader';
import { bool, custom, group, num, read, secs, str, yamlKeys } from '../setting';
import { ModelCapabilities } from '../../protocol';
import { AffinityConfig, readAffinityConfig, readExposeWorkerHeader } from './routing-affinity';

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
export interface RoutingConfig {
  strategy: StrategyName;
  weights: ScoringWeights;
  /** alias → target model (single level). */
  aliases: Map<string, string>;
  /** model → fallback models, tried in order when the model has no eligible worker. */
  fallbacks: Map<string, string[]>;
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
    fields: ['aliases'],
    docDefault: 'none',
    doc: 'alias → model (single level); the variable reads `gpt-4=llama3:70b,gpt-3.5-turbo=llama3:8b` and wins per alias',
  }),
  fallbacks: custom({
    env: 'ROUTING_FALLBACKS',
    yaml: 'fallbacks',
    reload: 'live',
    fields: ['fallbacks'],
    docDefault: 'none',
    doc: 'model → fallback models, tried in order when the model has no eligible worker; the variable reads `llama3:70b=llama3:8b,mistral:7b;m2=m3`',
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
  checkAliasesAndFallbacks(config, problems);
  for (const key of r.unknownKeys())
    problems.push(`routing.${key} (config file) is not a routing setting (known: ${[...ROUTING_KEYS, 'affinity', 'expose_worker_header'].join(', ')})`);
  problems.push(...r.problems);
  return config;
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

/** Model names in routing config: non-empty, trimmed, bounded. */
function modelName(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const name = value.trim();
  return name && name.length <= 256 ? name : undefined;
}

/** `routing.aliases` (a mapping) and ROUTING_ALIASES (`alias=target,alias2=target2`, env wins per alias). */
function readAliases(envValue: string | undefined, yamlValue: unknown, problems: string[]): Map<string, string> {
  const aliases = new Map<string, string>();
  const add = (alias: unknown, target: unknown, where: string) => {
    const a = modelName(alias);
    const t = modelName(target);
    if (!a || !t) return problems.push(`${where}: an alias and its target must be non-empty model names (at most 256 characters)`);
    aliases.set(a, t);
  };
  if (yamlValue !== undefined && yamlValue !== null) {
    if (typeof yamlValue !== 'object' || Array.isArray(yamlValue)) problems.push('routing.aliases must be a mapping of alias: target');
    else for (const [alias, target] of Object.entries(yamlValue as Yaml)) add(alias, target, `routing.aliases.${alias}`);
  }
  for (const entry of splitList(envValue, ',')) {
    const eq = entry.indexOf('=');
    add(eq < 0 ? '' : entry.slice(0, eq), entry.slice(eq + 1), `ROUTING_ALIASES entry "${entry}"`);
  }
  return aliases;
}

/** `routing.fallbacks` (model: [fallbacks]) and ROUTING_FALLBACKS (`model=fb1,fb2;model2=fb3`). */
function readFallbacks(envValue: string | undefined, yamlValue: unknown, problems: string[]): Map<string, string[]> {
  const fallbacks = new Map<string, string[]>();
  const add = (model: unknown, chain: unknown, where: string) => {
    const m = modelName(model);
    const list = Array.isArray(chain) ? chain.map(modelName) : undefined;
    if (!m || !list || list.some((x) => x === undefined)) {
      return problems.push(`${where}: must map a model name to a list of model names`);
    }
    fallbacks.set(m, list as string[]);
  };
  if (yamlValue !== undefined && yamlValue !== null) {
    if (typeof yamlValue !== 'object' || Array.isArray(yamlValue)) problems.push('routing.fallbacks must be a mapping of model: [fallback, …]');
    else for (const [model, chain] of Object.entries(yamlValue as Yaml)) add(model, chain, `routing.fallbacks.${model}`);
  }
  for (const entry of splitList(envValue, ';')) {
    const eq = entry.indexOf('=');
    add(eq < 0 ? '' : entry.slice(0, eq), splitList(entry.slice(eq + 1), ','), `ROUTING_FALLBACKS entry "${entry}"`);
  }
  return fallbacks;
}

function splitList(value: string | undefined, separator: string): string[] {
  return (value ?? '')
    .split(separator)
    .map((s) => s.trim())
    .filter(Boolean);
}

/** Aliases are single-level (no alias to an alias, so no cycles); no model falls back to itself. */
function checkAliasesAndFallbacks(config: RoutingConfig, problems: string[]): void {
  for (const [alias, target] of config.aliases) {
    if (alias === target) problems.push(`routing.aliases: "${alias}" points at itself`);
    else if (config.aliases.has(target)) {
      problems.push(`routing.aliases: "${alias}" → "${target}" points at another alias (aliases are single-level; a chain or cycle is not allowed)`);
    }
  }
  for (const [model, chain] of config.fallbacks) {
    const resolved = config.aliases.get(model) ?? model;
    for (const fb of chain) {
      if (fb === model || fb === resolved || (config.aliases.get(fb) ?? fb) === resolved) {
        problems.push(`routing.fallbacks: "${model}" falls back to itself${fb !== model ? ` (through "${fb}")` : ''}`);
      }
    }
    if (new Set(chain).size !== chain.length) problems.push(`routing.fallbacks: "${model}" lists a fallback twice`);
  }
}

const CAPABILITY_FLAGS = ['vision', 'tools', 'json_mode'] as const;

/**
 * Per-model capability declarations of a provider (config file or admin API), which override what
 * its workers advertise: `{model: {vision?, tools?, json_mode?, context_length?}}`.
 */
export function parseCapabilityDeclarations(value: unknown, where: string, problems: string[]): Record<string, ModelCapabilities> {
  const out: Record<string, ModelCapabilities> = {};
  if (value === undefined || value === null) return out;
  if (typeof value !== 'object' || Array.isArray(value)) {
    problems.push(`${where} must be a mapping of model: {vision, tools, json_mode, context_length}`);
    return out;
  }
  for (const [model, raw] of Object.entries(value as Yaml)) {
    const at = `${where}.${model}`;
    if (!modelName(model)) problems.push(`${at}: model names must be non-empty and at most 256 characters`);
    if (!raw || typeof raw !== 'object' || Array.isArray(raw)) {
      problems.push(`${at} must be a mapping of vision, tools, json_mode, context_length`);
      continue;
    }
    const caps: ModelCapabilities = {};
    for (const [key, v] of Object.entries(raw as Yaml)) {
      if ((CAPABILITY_FLAGS as readonly string[]).includes(key)) {
        if (typeof v === 'boolean') caps[key as (typeof CAPABILITY_FLAGS)[number]] = v;
        else problems.push(`${at}.${key} must be true or false`);
      } else if (key === 'context_length') {
        if (typeof v === 'number' && Number.isInteger(v) && v > 0) caps.context_length = v;
        else problems.push(`${at}.context_length must be a positive integer`);
      } else problems.push(`${at}.${key} is not a capability (known: vision, tools, json_mode, context_length)`);
    }
    out[model.trim()] = caps;
  }
  return out;
}
