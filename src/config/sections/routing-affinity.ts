import { Env, Reader, Yaml } from '../../common/config-reader';
import { custom, envName, group, num } from '../setting';

/**
 * Where a request's affinity key comes from, in the default order (first match wins):
 * `header` = `x-session-affinity`; `session_header` = a session header a known client sends
 * (Claude Code's `x-claude-code-session-id`, Codex's `session_id` / `session-id`);
 * `prompt_cache_key` (OpenAI), `metadata.user_id` (Anthropic), `user`; `prefix` = a hash of the
 * normalised start of the prompt (see routing/affinity-key.ts).
 */
export const AFFINITY_SOURCES = ['header', 'session_header', 'prompt_cache_key', 'metadata.user_id', 'user', 'prefix'] as const;
export type AffinitySource = (typeof AFFINITY_SOURCES)[number];

/** `routing.affinity`: cache affinity with bounded loads (routing/affinity.ts). */
export interface AffinityConfig {
  enabled: boolean;
  sources: readonly AffinitySource[];
  /** Characters of the normalised prompt start hashed by the `prefix` source. */
  prefixChars: number;
  /** Prompts shorter than this (characters) get no `prefix` key; 0 = every prompt gets one. */
  minPrefixChars: number;
  /** A key's worker is skipped while its load exceeds this × the mean load of the eligible workers. */
  loadFactor: number;
}

/** The `routing.affinity` keys (a mapping inside `routing:`) and `routing.expose_worker_header`. */
export const ROUTING_AFFINITY_SETTINGS = group('routing', 'routing', {
  affinityEnabled: custom({
    env: 'ROUTING_AFFINITY_ENABLED',
    yaml: 'affinity.enabled',
    reload: 'live',
    fields: ['affinity.enabled'],
    docDefault: '`true` with the `smart` strategy, else `false`',
    doc: 'route requests sharing an affinity key to the same worker, within a load bound ([routing.md](routing.md#cache-affinity))',
  }),
  affinitySources: custom({
    env: 'ROUTING_AFFINITY_SOURCES',
    yaml: 'affinity.sources',
    reload: 'live',
    fields: ['affinity.sources'],
    docDefault: `\`${AFFINITY_SOURCES.join(',')}\``,
    doc: 'where the affinity key comes from, first match wins: a list (the variable: comma-separated) of these names',
  }),
  affinityPrefixChars: num({
    env: 'ROUTING_AFFINITY_PREFIX_CHARS',
    yaml: 'affinity.prefix_chars',
    default: 2048,
    opts: { min: 1, max: 1_048_576, integer: true },
    reload: 'live',
    fields: ['affinity.prefixChars'],
    doc: 'characters of the normalised system and leading messages hashed into the `prefix` key',
  }),
  affinityMinPrefixChars: num({
    env: 'ROUTING_AFFINITY_MIN_PREFIX_CHARS',
    yaml: 'affinity.min_prefix_chars',
    default: 512,
    opts: { min: 0, max: 1_048_576, integer: true },
    reload: 'live',
    fields: ['affinity.minPrefixChars'],
    doc: "prompts shorter than this many characters get no `prefix` key (recomputing them costs the backend little, and pinning short one-off prompts would only take away the strategy's spreading); `0` = every prompt gets one",
  }),
  affinityLoadFactor: num({
    env: 'ROUTING_AFFINITY_LOAD_FACTOR',
    yaml: 'affinity.load_factor',
    default: 1.25,
    opts: { min: 1, max: 100 },
    reload: 'live',
    fields: ['affinity.loadFactor'],
    doc: "a key's worker is passed over while one more request would take its load past ⌈this × (sum of the eligible workers' loads + 1) / their number⌉",
  }),
  exposeWorkerHeader: custom({
    env: 'ROUTING_EXPOSE_WORKER_HEADER',
    yaml: 'expose_worker_header',
    default: false,
    reload: 'live',
    fields: ['exposeWorkerHeader'],
    doc: "responses carry `x-switchboard-worker` (the serving worker's name)",
  }),
});
const A = ROUTING_AFFINITY_SETTINGS.settings;
const sub = (yaml: string | undefined) => yaml!.slice('affinity.'.length);

/** Reads `routing.affinity` (a mapping); `smart` turns it on unless `enabled` says otherwise. */
export function readAffinityConfig(env: Env, value: unknown, strategy: string, problems: string[]): AffinityConfig {
  let yaml: Yaml = {};
  if (value !== undefined && value !== null) {
    if (typeof value === 'object' && !Array.isArray(value)) yaml = value as Yaml;
    else problems.push('routing.affinity (config file) must be a mapping');
  }
  const keys = [A.affinityEnabled, A.affinitySources, A.affinityPrefixChars, A.affinityMinPrefixChars, A.affinityLoadFactor].map((s) => sub(s.yaml));
  const r = new Reader(env, yaml, 'routing.affinity', keys);
  const config: AffinityConfig = {
    enabled: r.bool(envName(A.affinityEnabled, env), sub(A.affinityEnabled.yaml), strategy === 'smart'),
    sources: readSources(env[A.affinitySources.env!], yaml[sub(A.affinitySources.yaml)], problems),
    prefixChars: r.number(envName(A.affinityPrefixChars, env), sub(A.affinityPrefixChars.yaml), A.affinityPrefixChars.default, A.affinityPrefixChars.opts),
    minPrefixChars: r.number(
      envName(A.affinityMinPrefixChars, env),
      sub(A.affinityMinPrefixChars.yaml),
      A.affinityMinPrefixChars.default,
      A.affinityMinPrefixChars.opts,
    ),
    loadFactor: r.number(envName(A.affinityLoadFactor, env), sub(A.affinityLoadFactor.yaml), A.affinityLoadFactor.default, A.affinityLoadFactor.opts),
  };
  for (const key of r.unknownKeys()) problems.push(`routing.affinity.${key} (config file) is not an affinity setting (known: ${keys.join(', ')})`);
  problems.push(...r.problems);
  return config;
}

/** `routing.expose_worker_header` / ROUTING_EXPOSE_WORKER_HEADER, read by the routing section's Reader. */
export function readExposeWorkerHeader(r: Reader, env: Env): boolean {
  return r.bool(envName(A.exposeWorkerHeader, env), A.exposeWorkerHeader.yaml, false);
}

function readSources(envValue: string | undefined, yamlValue: unknown, problems: string[]): AffinitySource[] {
  let list: unknown[] | undefined;
  if (envValue !== undefined && envValue.trim() !== '') list = envValue.split(',').map((s) => s.trim());
  else if (yamlValue !== undefined && yamlValue !== null) {
    if (Array.isArray(yamlValue)) list = yamlValue;
    else problems.push('routing.affinity.sources must be a list of source names');
  }
  if (!list) return [...AFFINITY_SOURCES];
  const out: AffinitySource[] = [];
  for (const s of list) {
    if (typeof s === 'string' && (AFFINITY_SOURCES as readonly string[]).includes(s)) {
      if (!out.includes(s as AffinitySource)) out.push(s as AffinitySource);
    } else problems.push(`routing.affinity.sources: "${String(s)}" is not a source (known: ${AFFINITY_SOURCES.join(', ')})`);
  }
  return out;
}
