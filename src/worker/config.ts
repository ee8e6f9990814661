import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { parse as parseYaml } from 'yaml';
import { ModelCapabilities } from '../protocol';
import { RUNNER_TYPES, RunnerChoice } from './models/lifecycle/types';
import { LOG_LEVELS, LogLevel } from './logger';
import { proxySettingsFromEnv } from './network/proxy-env';
import { readPemCertificates } from './network/tls-trust';

/** Everything the daemon needs, resolved and validated. Durations are milliseconds. */
export interface WorkerConfig {
  /** ws:// or wss:// base of the gateway, no trailing slash. */
  proxyUrl: string;
  workerSecret: string;
  provider: string;
  /** Backend root (no trailing slash, no trailing /v1): endpoint paths are appended to it. */
  backendUrl: string;
  /** When set, replaces the client's credentials on every backend call. */
  backendApiKey?: string;
  /** True when models were configured as `*`: the list is read from the backend's /v1/models. */
  discoverModels: boolean;
  /** The explicit model list (empty when `discoverModels`). */
  models: string[];
  workerName: string;
  maxConcurrency: number;
  capabilities: Record<string, ModelCapabilities>;
  logLevel: LogLevel;
  drainTimeoutMs: number;
  exitOnDrain: boolean;
  heartbeatIntervalMs: number;
  reconnectMinMs: number;
  reconnectMaxMs: number;
  modelsPollIntervalMs: number;
  /** Ask the backend what it is and what it can do (capabilities, endpoints, runner). */
  probe: boolean;
  /** Routing priority asked of the gateway, lower is preferred; unset = the gateway's default. */
  priority?: number;
  /** PEM file with private CA certificates trusted in addition to the usual ones. */
  caFile?: string;
  /** NODE_EXTRA_CA_CERTS, kept when --ca-file replaces the CA list. */
  extraCaCertsFile?: string;
  insecureSkipVerify: boolean;
  /** From HTTP_PROXY / http_proxy: for ws:// and http:// targets. */
  httpProxy?: string;
  /** From HTTPS_PROXY / https_proxy: for wss:// and https:// targets. */
  httpsProxy?: string;
  /** From NO_PROXY / no_proxy. */
  noProxy?: string;
  /** Ask the gateway for model lifecycle operations (load, unload, cache flush) and carry them out. */
  modelLifecycle: boolean;
  /** The backend type lifecycle operations are carried out for; `auto` = what the probe detected. */
  runner: RunnerChoice;
  /** Deadline of one lifecycle operation. */
  lifecycleTimeoutMs: number;
  /** vLLM: the directory (as the vLLM host sees it) LoRA adapters are loaded from by name. */
  loraDir?: string;
}

/** Raised once with every bad value, so an operator fixes them all in one go. */
export class WorkerConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid worker configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'WorkerConfigError';
  }
}

type Kind = 'string' | 'url' | 'list' | 'int' | 'uint' | 'seconds' | 'bool' | 'level' | 'capabilities';

interface OptionSpec {
  key: Exclude<keyof WorkerConfig, 'discoverModels' | 'extraCaCertsFile' | 'httpProxy' | 'httpsProxy' | 'noProxy'> | 'config';
  flag: string;
  env: string;
  /** Key in the config file; absent for options that cannot live in the file. */
  file?: string;
  kind: Kind;
  value?: string;
  help: string;
  defaultText?: string;
}

/** The single source of truth for flags, env names, file keys and --help. */
export const OPTIONS: readonly OptionSpec[] = [
  { key: 'config', flag: 'config', env: 'WORKER_CONFIG', kind: 'string', value: 'PATH', help: 'YAML or JSON file with any of the settings below (snake_case keys).' },
  { key: 'proxyUrl', flag: 'proxy-url', env: 'PROXY_URL', file: 'proxy_url', kind: 'url', value: 'URL', defaultText: 'http://127.0.0.1:8080', help: 'Switchboard gateway base URL; http(s) is turned into ws(s). The daemon dials <url>/v1/worker/connect?provider=<name>.' },
  { key: 'workerSecret', flag: 'worker-secret', env: 'WORKER_SECRET', file: 'worker_secret', kind: 'string', value: 'SECRET', defaultText: 'required', help: "The provider's worker secret, sent in the x-worker-secret header (so printable ASCII: no control characters or non-Latin letters). Prefer the env var: flags show up in `ps`." },
  { key: 'provider', flag: 'provider', env: 'PROVIDER_NAME', file: 'provider', kind: 'string', value: 'NAME', defaultText: 'local', help: 'Provider (worker pool) to join.' },
  { key: 'backendUrl', flag: 'backend-url', env: 'BACKEND_URL', file: 'backend_url', kind: 'url', value: 'URL', defaultText: 'http://127.0.0.1:8000', help: 'OpenAI-compatible backend (llama-server, vLLM, Ollama …). A trailing /v1 is dropped: endpoint paths already start with /v1.' },
  { key: 'backendApiKey', flag: 'backend-api-key', env: 'BACKEND_API_KEY', file: 'backend_api_key', kind: 'string', value: 'KEY', defaultText: 'none: client headers are forwarded', help: "Key the backend expects (e.g. vLLM --api-key); replaces the client's authorization / x-api-key on backend calls." },
  { key: 'models', flag: 'models', env: 'MODELS', file: 'models', kind: 'list', value: 'LIST', defaultText: '*', help: "Comma-separated model names to register with, or * to register the ids the backend lists at GET /v1/models (re-read every --models-poll-interval). Either way a models_refresh from the gateway re-reads the backend's list; if the backend cannot answer, the current list is kept (and the failure logged)." },
  { key: 'workerName', flag: 'worker-name', env: 'WORKER_NAME', file: 'worker_name', kind: 'string', value: 'NAME', defaultText: 'the host name', help: 'Name shown in the gateway.' },
  { key: 'maxConcurrency', flag: 'max-concurrency', env: 'MAX_CONCURRENCY', file: 'max_concurrency', kind: 'int', value: 'N', defaultText: '1', help: 'Requests run against the backend at once. Extra requests the gateway assigns wait in a local queue of the same size; beyond that they get 503.' },
  { key: 'capabilities', flag: 'capability', env: 'CAPABILITIES', file: 'capabilities', kind: 'capabilities', value: 'MODEL:CAPS', help: "Capability hints for one model, repeatable: --capability 'llama3.1:8b:vision,tools,json_mode,context_length=8192' (the last ':' separates the model). Env: entries separated by ';'. File: a map model -> {vision, tools, json_mode, context_length}." },
  { key: 'logLevel', flag: 'log-level', env: 'LOG_LEVEL', file: 'log_level', kind: 'level', value: 'LEVEL', defaultText: 'info', help: `One of ${LOG_LEVELS.join(', ')}. JSON lines on stderr.` },
  { key: 'drainTimeoutMs', flag: 'drain-timeout', env: 'DRAIN_TIMEOUT_SECS', file: 'drain_timeout_secs', kind: 'seconds', value: 'SECS', defaultText: '30', help: 'On SIGTERM/SIGINT: how long in-flight requests may run before they are aborted.' },
  { key: 'exitOnDrain', flag: 'exit-on-drain', env: 'EXIT_ON_DRAIN', file: 'exit_on_drain', kind: 'bool', defaultText: 'false', help: "After the gateway's graceful_shutdown has drained this worker: exit 0 instead of reconnecting. --no-exit-on-drain turns it off." },
  { key: 'heartbeatIntervalMs', flag: 'heartbeat-interval', env: 'HEARTBEAT_INTERVAL_SECS', file: 'heartbeat_interval_secs', kind: 'seconds', value: 'SECS', defaultText: '15', help: "The gateway's ping interval. Hearing nothing for 3x this long means the link is dead: reconnect." },
  { key: 'reconnectMinMs', flag: 'reconnect-min', env: 'RECONNECT_MIN_SECS', file: 'reconnect_min_secs', kind: 'seconds', value: 'SECS', defaultText: '1', help: 'First reconnect delay; doubles on each failed attempt (plus up to 20% jitter).' },
  { key: 'reconnectMaxMs', flag: 'reconnect-max', env: 'RECONNECT_MAX_SECS', file: 'reconnect_max_secs', kind: 'seconds', value: 'SECS', defaultText: '30', help: 'Largest reconnect delay.' },
  { key: 'modelsPollIntervalMs', flag: 'models-poll-interval', env: 'MODELS_POLL_INTERVAL_SECS', file: 'models_poll_interval_secs', kind: 'seconds', value: 'SECS', defaultText: '30', help: 'With --models *: how often to re-read the backend model list and send models_update when it changed. 0 = only on models_refresh.' },
  { key: 'probe', flag: 'probe', env: 'PROBE_BACKEND', file: 'probe', kind: 'bool', defaultText: 'true', help: "At start and on every model refresh, ask the backend (llama-server /props, vLLM /v1/models, Ollama /api/show, a POST {} per endpoint) for context length, vision, tools and the endpoints it serves, and advertise them. --no-probe (or --probe=false) advertises only --capability. Explicit --capability values always win." },
  { key: 'priority', flag: 'priority', env: 'PRIORITY', file: 'priority', kind: 'uint', value: 'N', defaultText: "the gateway's", help: 'Routing priority for this worker, an integer >= 0; lower is preferred.' },
  { key: 'caFile', flag: 'ca-file', env: 'CA_FILE', file: 'ca_file', kind: 'string', value: 'PATH', help: 'PEM file with a private CA to trust (for the gateway, an https backend or an https proxy), in addition to the public roots and NODE_EXTRA_CA_CERTS.' },
  { key: 'insecureSkipVerify', flag: 'insecure-skip-verify', env: 'INSECURE_SKIP_VERIFY', file: 'insecure_skip_verify', kind: 'bool', defaultText: 'false', help: 'Do not verify TLS certificates (gateway, https backend, https proxy). For tests only: anyone on the path can then read the worker secret and every prompt.' },
  { key: 'modelLifecycle', flag: 'model-lifecycle', env: 'MODEL_LIFECYCLE', file: 'model_lifecycle', kind: 'bool', defaultText: 'true', help: 'Ask the gateway for the model_lifecycle feature and carry out the governed model load, unload and cache flush it relays. --no-model-lifecycle does not ask: the gateway then sends none to this worker.' },
  { key: 'runner', flag: 'runner', env: 'RUNNER_TYPE', file: 'runner', kind: 'string', value: 'TYPE', defaultText: 'auto', help: `Which server the backend is, for lifecycle operations: ${RUNNER_TYPES.join(', ')}. auto takes what probing detected (a backend serving GET /v1/capabilities is driven through the runner API); openai-compatible answers every operation unsupported.` },
  { key: 'lifecycleTimeoutMs', flag: 'lifecycle-timeout', env: 'LIFECYCLE_TIMEOUT_SECS', file: 'lifecycle_timeout_secs', kind: 'seconds', value: 'SECS', defaultText: '3600', help: 'Deadline of one lifecycle operation, a model download included; past it the operation is reported failed.' },
  { key: 'loraDir', flag: 'lora-dir', env: 'LORA_DIR', file: 'lora_dir', kind: 'string', value: 'PATH', help: 'vLLM only: absolute path, as the vLLM server sees it, of the directory holding LoRA adapters. A model_load for a model vLLM does not serve then loads <PATH>/<model id> as a LoRA adapter, only if it exists at that path on this host too and resolves (symlinks followed) inside PATH; unset, such loads are unsupported.' },
];

export const DEFAULTS = {
  proxyUrl: 'http://127.0.0.1:8080',
  provider: 'local',
  backendUrl: 'http://127.0.0.1:8000',
  models: '*',
  maxConcurrency: 1,
  logLevel: 'info' as LogLevel,
  drainTimeoutSecs: 30,
  exitOnDrain: false,
  heartbeatIntervalSecs: 15,
  reconnectMinSecs: 1,
  reconnectMaxSecs: 30,
  modelsPollIntervalSecs: 30,
  probe: true,
  insecureSkipVerify: false,
  modelLifecycle: true,
  runner: 'auto' as RunnerChoice,
  lifecycleTimeoutSecs: 3600,
};

const PROVIDER_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export function helpText(): string {
  const lines = [
    'Usage: switchboard-worker [options]',
    '',
    'Connects a local OpenAI-compatible inference server to a Switchboard gateway.',
    'Every option can also come from an environment variable or the config file;',
    'precedence: flags > environment > config file > defaults.',
    '',
    'Options:',
  ];
  for (const o of OPTIONS) {
    const flag = `--${o.flag}${o.value ? ` ${o.value}` : ''}`;
    const sources = [`env ${o.env}`, o.file ? `file ${o.file}` : undefined].filter(Boolean).join(', ');
    lines.push(`  ${flag}`);
    lines.push(`      ${o.help}`);
    lines.push(`      [${sources}${o.defaultText ? `; default: ${o.defaultText}` : ''}]`);
  }
  lines.push('  --help, -h       Show this help and exit.');
  lines.push('  --version        Print the version and exit.');
  lines.push('');
  lines.push('Proxies (read like curl): HTTPS_PROXY/https_proxy for a wss:// gateway and an https:// backend,');
  lines.push('HTTP_PROXY/http_proxy for ws:// and http://, NO_PROXY/no_proxy for hosts reached directly');
  lines.push('(a loopback backend is proxied unless NO_PROXY lists it). NODE_EXTRA_CA_CERTS is honoured.');
  lines.push('');
  lines.push('Exit codes: 0 after SIGTERM/SIGINT or a drain with --exit-on-drain; 2 for a bad configuration.');
  return lines.join('\n') + '\n';
}

// ---------------------------------------------------------------------------------------------
// Layers: each source is reduced to raw values keyed by option, with a label for messages.

interface Raw {
  value: unknown;
  source: string;
}
type Layer = Partial<Record<OptionSpec['key'], Raw>>;

export interface ParsedArgs {
  layer: Layer;
  help: boolean;
  version: boolean;
  problems: string[];
}

const BY_FLAG = new Map(OPTIONS.map((o) => [o.flag, o]));

export function parseArgs(argv: readonly string[]): ParsedArgs {
  const layer: Layer = {};
  const problems: string[] = [];
  let help = false;
  let version = false;
  const capabilityEntries: string[] = [];

  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--help' || arg === '-h') {
      help = true;
      continue;
    }
    if (arg === '--version') {
      version = true;
      continue;
    }
    if (!arg.startsWith('--')) {
      problems.push(`unexpected argument "${arg}"`);
      continue;
    }
    const eq = arg.indexOf('=');
    let name = eq === -1 ? arg.slice(2) : arg.slice(2, eq);
    let inline: string | undefined = eq === -1 ? undefined : arg.slice(eq + 1);
    let negated = false;
    if (!BY_FLAG.has(name) && name.startsWith('no-') && BY_FLAG.get(name.slice(3))?.kind === 'bool') {
      name = name.slice(3);
      negated = true;
    }
    const spec = BY_FLAG.get(name);
    if (!spec) {
      problems.push(`unknown option --${name}`);
      continue;
    }
    const source = `--${spec.flag}`;
    if (spec.kind === 'bool') {
      if (negated) {
        if (inline !== undefined) problems.push(`--no-${spec.flag} takes no value`);
        layer[spec.key] = { value: false, source };
      } else {
        layer[spec.key] = { value: inline ?? true, source };
      }
      continue;
    }
    if (inline === undefined) {
      const next = argv[i + 1];
      if (next === undefined || (next.startsWith('--') && next.length > 2)) {
        problems.push(`--${spec.flag} needs a value`);
        continue;
      }
      inline = next;
      i++;
    }
    if (spec.kind === 'capabilities') capabilityEntries.push(inline);
    else layer[spec.key] = { value: inline, source };
  }
  if (capabilityEntries.length > 0) layer.capabilities = { value: capabilityEntries, source: '--capability' };
  return { layer, help, version, problems };
}

type Env = Record<string, string | undefined>;

function envLayer(env: Env): Layer {
  const layer: Layer = {};
  for (const o of OPTIONS) {
    const v = env[o.env];
    if (v === undefined || v === '') continue;
    layer[o.key] = { value: o.kind === 'capabilities' ? splitCapabilityEnv(v) : v, source: o.env };
  }
  return layer;
}

function splitCapabilityEnv(v: string): string[] {
  return v
    .split(/[;\n]/)
    .map((s) => s.trim())
    .filter(Boolean);
}

function fileLayer(path: string, problems: string[]): Layer {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    problems.push(`config file "${path}" cannot be read: ${(e as Error).message}`);
    return {};
  }
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (e) {
    problems.push(`config file "${path}" is neither valid YAML nor JSON: ${(e as Error).message}`);
    return {};
  }
  if (doc === null || doc === undefined) return {};
  if (typeof doc !== 'object' || Array.isArray(doc)) {
    problems.push(`config file "${path}" must hold a mapping of settings`);
    return {};
  }
  const byFileKey = new Map(OPTIONS.filter((o) => o.file).map((o) => [o.file as string, o]));
  const layer: Layer = {};
  for (const [k, v] of Object.entries(doc as Record<string, unknown>)) {
    const spec = byFileKey.get(k);
    if (!spec) {
      problems.push(`config file "${path}": unknown key "${k}"`);
      continue;
    }
    if (v === null || v === undefined) continue;
    layer[spec.key] = { value: v, source: `${k} (config file)` };
  }
  return layer;
}

// ---------------------------------------------------------------------------------------------
// Value checks. Each returns undefined after recording a problem.

function asString(raw: Raw, problems: string[]): string | undefined {
  if (typeof raw.value === 'string') return raw.value.trim();
  if (typeof raw.value === 'number') return String(raw.value);
  problems.push(`${raw.source} must be a string`);
  return undefined;
}

/** Node timers overflow (and fire at once, or throw) past 2^31-1 ms, about 24.8 days. */
const MAX_TIMER_SECS = 2147483;

function asSeconds(raw: Raw, problems: string[], opts: { allowZero: boolean }): number | undefined {
  const v = raw.value;
  const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
  if (!Number.isFinite(n) || n < 0 || (!opts.allowZero && n === 0)) {
    problems.push(`${raw.source} must be a number of seconds ${opts.allowZero ? '>= 0' : '> 0'}, got "${String(v)}"`);
    return undefined;
  }
  if (n > MAX_TIMER_SECS) {
    problems.push(`${raw.source} must be at most ${MAX_TIMER_SECS} seconds (about 24.8 days, the longest timer Node keeps), got "${String(v)}"`);
    return undefined;
  }
  return Math.round(n * 1000);
}

function asPositiveInt(raw: Raw, problems: string[]): number | undefined {
  const v = raw.value;
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^\s*\d+\s*$/.test(v) ? Number(v) : NaN;
  if (!Number.isInteger(n) || n < 1) {
    problems.push(`${raw.source} must be an integer >= 1, got "${String(v)}"`);
    return undefined;
  }
  return n;
}

function asNonNegativeInt(raw: Raw, problems: string[]): number | undefined {
  const v = raw.value;
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^\s*\d+\s*$/.test(v) ? Number(v) : NaN;
  if (!Number.isSafeInteger(n) || n < 0) {
    problems.push(`${raw.source} must be an integer >= 0, got "${String(v)}"`);
    return undefined;
  }
  return n;
}

function asBool(raw: Raw, problems: string[]): boolean | undefined {
  if (typeof raw.value === 'boolean') return raw.value;
  const s = String(raw.value).trim().toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(s)) return true;
  if (['0', 'false', 'no', 'off'].includes(s)) return false;
  problems.push(`${raw.source} must be true or false, got "${String(raw.value)}"`);
  return undefined;
}

function asUrl(raw: Raw, problems: string[], schemes: string[]): URL | undefined {
  const s = asString(raw, problems);
  if (s === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(s);
  } catch {
    problems.push(`${raw.source} must be a URL, got "${s}"`);
    return undefined;
  }
  if (!schemes.includes(url.protocol)) {
    problems.push(`${raw.source} must use ${schemes.map((p) => p.replace(':', '')).join('/')}, got "${s}"`);
    return undefined;
  }
  if (url.search || url.hash) {
    problems.push(`${raw.source} must not have a query string or fragment, got "${s}"`);
    return undefined;
  }
  return url;
}

/**
 * Characters Node's http refuses in a header value (it throws, "Invalid character in header
 * content"): anything but HTAB, SP, visible ASCII and obs-text (0x80-0xFF). So control characters
 * and non-Latin-1 letters such as Cyrillic cannot be part of a secret sent in a header.
 */
const INVALID_HEADER_VALUE_CHAR = /[^\t\x20-\x7e\x80-\xff]/;

/** Records a problem when `value` cannot be sent in an HTTP header. Never echoes the value: it is a secret. */
function checkHeaderSafe(raw: Raw, value: string, sentIn: string, problems: string[]): boolean {
  if (!INVALID_HEADER_VALUE_CHAR.test(value)) return true;
  problems.push(
    `${raw.source} contains characters that cannot be sent in an HTTP header (it goes in ${sentIn}): ` +
      'no control characters and no letters outside Latin-1 (e.g. Cyrillic); use printable ASCII',
  );
  return false;
}

function stripTrailingSlashes(s: string): string {
  return s.replace(/\/+$/, '');
}

/** http(s) → ws(s); trailing slashes dropped. */
export function toWebSocketBase(url: URL): string {
  const scheme = url.protocol === 'https:' || url.protocol === 'wss:' ? 'wss:' : 'ws:';
  return stripTrailingSlashes(`${scheme}//${url.host}${url.pathname}`);
}

function asModelList(raw: Raw, problems: string[]): { discover: boolean; models: string[] } | undefined {
  let items: string[];
  if (Array.isArray(raw.value) && raw.value.every((x) => typeof x === 'string')) items = raw.value as string[];
  else if (typeof raw.value === 'string') items = raw.value.split(',');
  else {
    problems.push(`${raw.source} must be a comma-separated list or a list of strings`);
    return undefined;
  }
  const models: string[] = [];
  for (const m of items.map((s) => s.trim()).filter(Boolean)) if (!models.includes(m)) models.push(m);
  if (models.length === 0) {
    problems.push(`${raw.source} must name at least one model, or * to ask the backend`);
    return undefined;
  }
  if (models.includes('*')) {
    if (models.length > 1) {
      problems.push(`${raw.source}: * (ask the backend) cannot be combined with explicit names`);
      return undefined;
    }
    return { discover: true, models: [] };
  }
  return { discover: false, models };
}

/** Parses "vision,tools,json_mode,context_length=8192" (booleans may be written vision=false). */
function parseCapabilityList(text: string, where: string, problems: string[]): ModelCapabilities | undefined {
  const caps: ModelCapabilities = {};
  let ok = true;
  for (const item of text.split(',').map((s) => s.trim()).filter(Boolean)) {
    const [name, value] = item.split('=', 2).map((s) => s.trim());
    if (name === 'context_length') {
      const n = value !== undefined && /^\d+$/.test(value) ? Number(value) : NaN;
      if (!Number.isInteger(n) || n < 1) {
        problems.push(`${where}: context_length needs a positive integer, e.g. context_length=8192`);
        ok = false;
      } else caps.context_length = n;
    } else if (name === 'vision' || name === 'tools' || name === 'json_mode') {
      if (value === undefined || value === 'true') caps[name] = true;
      else if (value === 'false') caps[name] = false;
      else {
        problems.push(`${where}: ${name} must be true or false, got "${value}"`);
        ok = false;
      }
    } else {
      problems.push(`${where}: unknown capability "${name}" (known: vision, tools, json_mode, context_length=N)`);
      ok = false;
    }
  }
  return ok ? caps : undefined;
}

function asCapabilities(raw: Raw, problems: string[]): Record<string, ModelCapabilities> | undefined {
  const out: Record<string, ModelCapabilities> = {};
  const before = problems.length;
  if (Array.isArray(raw.value)) {
    for (const entry of raw.value) {
      const where = `${raw.source} "${String(entry)}"`;
      if (typeof entry !== 'string') {
        problems.push(`${where} must be MODEL:CAPS`);
        continue;
      }
      const colon = entry.lastIndexOf(':');
      const model = colon === -1 ? '' : entry.slice(0, colon).trim();
      if (!model) {
        problems.push(`${where} must be MODEL:CAPS, e.g. llama3:vision,tools,context_length=8192`);
        continue;
      }
      const caps = parseCapabilityList(entry.slice(colon + 1), where, problems);
      if (caps) out[model] = caps;
    }
  } else if (raw.value && typeof raw.value === 'object') {
    for (const [model, value] of Object.entries(raw.value as Record<string, unknown>)) {
      const where = `${raw.source} "${model}"`;
      if (typeof value === 'string') {
        const caps = parseCapabilityList(value, where, problems);
        if (caps) out[model] = caps;
        continue;
      }
      if (!value || typeof value !== 'object' || Array.isArray(value)) {
        problems.push(`${where} must be a mapping like {vision: true, context_length: 8192}`);
        continue;
      }
      const caps: ModelCapabilities = {};
      for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
        if (k === 'context_length') {
          if (typeof v === 'number' && Number.isInteger(v) && v > 0) caps.context_length = v;
          else problems.push(`${where}.context_length must be a positive integer, got "${String(v)}"`);
        } else if (k === 'vision' || k === 'tools' || k === 'json_mode') {
          if (typeof v === 'boolean') caps[k] = v;
          else problems.push(`${where}.${k} must be true or false, got "${String(v)}"`);
        } else problems.push(`${where}: unknown capability "${k}"`);
      }
      out[model] = caps;
    }
  } else {
    problems.push(`${raw.source} must be a mapping of model -> capabilities`);
  }
  return problems.length === before ? out : undefined;
}

// ---------------------------------------------------------------------------------------------

export interface LoadedConfig {
  config?: WorkerConfig;
  help: boolean;
  version: boolean;
}

/**
 * Resolves flags > env > file > defaults. Throws WorkerConfigError listing every problem.
 * `--help`/`--version` short-circuit validation so they work without a secret.
 */
export function loadWorkerConfig(argv: readonly string[], env: Env = process.env): LoadedConfig {
  const args = parseArgs(argv);
  if (args.help || args.version) return { help: args.help, version: args.version };
  const problems = [...args.problems];

  const envValues = envLayer(env);
  const configRaw = args.layer.config ?? envValues.config;
  const file = configRaw ? fileLayer(String(configRaw.value), problems) : {};
  const layers = [args.layer, envValues, file];
  const pick = (key: OptionSpec['key']): Raw | undefined => {
    for (const l of layers) if (l[key] !== undefined) return l[key];
    return undefined;
  };

  const read = <T>(key: OptionSpec['key'], parse: (raw: Raw) => T | undefined, fallback: T): T => {
    const raw = pick(key);
    if (!raw) return fallback;
    return parse(raw) ?? fallback;
  };

  const proxy = read('proxyUrl', (r) => asUrl(r, problems, ['http:', 'https:', 'ws:', 'wss:']), new URL(DEFAULTS.proxyUrl));
  const backend = read('backendUrl', (r) => asUrl(r, problems, ['http:', 'https:']), new URL(DEFAULTS.backendUrl));

  const secretRaw = pick('workerSecret');
  const workerSecret = secretRaw ? (asString(secretRaw, problems) ?? '') : '';
  if (!workerSecret) {
    problems.push('a worker secret is required: set WORKER_SECRET (or pass --worker-secret, or worker_secret in the config file)');
  } else {
    checkHeaderSafe(secretRaw as Raw, workerSecret, 'the x-worker-secret header', problems);
  }

  const provider = read('provider', (r) => {
    const s = asString(r, problems);
    if (s !== undefined && !PROVIDER_NAME.test(s)) {
      problems.push(`${r.source} must be 1-64 letters, digits, '.', '_' or '-', got "${s}"`);
      return undefined;
    }
    return s;
  }, DEFAULTS.provider);

  const models = read('models', (r) => asModelList(r, problems), { discover: true, models: [] as string[] });
  const workerName = read('workerName', (r) => {
    const s = asString(r, problems);
    if (s === '') {
      problems.push(`${r.source} must not be empty`);
      return undefined;
    }
    return s;
  }, hostname());
  const maxConcurrency = read('maxConcurrency', (r) => asPositiveInt(r, problems), DEFAULTS.maxConcurrency);

  // Capabilities merge per model across layers (a flag for one model keeps the file's others).
  const capabilities: Record<string, ModelCapabilities> = {};
  for (const l of [file, envValues, args.layer]) {
    const raw = l.capabilities;
    if (raw) Object.assign(capabilities, asCapabilities(raw, problems) ?? {});
  }

  const logLevel = read('logLevel', (r) => {
    const s = asString(r, problems)?.toLowerCase();
    if (s !== undefined && !(LOG_LEVELS as readonly string[]).includes(s)) {
      problems.push(`${r.source} must be one of ${LOG_LEVELS.join(', ')}, got "${s}"`);
      return undefined;
    }
    return s as LogLevel | undefined;
  }, DEFAULTS.logLevel);

  const seconds = (key: OptionSpec['key'], fallbackSecs: number, allowZero: boolean) =>
    read(key, (r) => asSeconds(r, problems, { allowZero }), Math.round(fallbackSecs * 1000));
  const drainTimeoutMs = seconds('drainTimeoutMs', DEFAULTS.drainTimeoutSecs, true);
  const heartbeatIntervalMs = seconds('heartbeatIntervalMs', DEFAULTS.heartbeatIntervalSecs, false);
  const reconnectMinMs = seconds('reconnectMinMs', DEFAULTS.reconnectMinSecs, false);
  const reconnectMaxMs = seconds('reconnectMaxMs', DEFAULTS.reconnectMaxSecs, false);
  const modelsPollIntervalMs = seconds('modelsPollIntervalMs', DEFAULTS.modelsPollIntervalSecs, true);
  if (reconnectMinMs > reconnectMaxMs) {
    problems.push(`reconnect min (${reconnectMinMs / 1000}s) must not exceed reconnect max (${reconnectMaxMs / 1000}s)`);
  }
  const exitOnDrain = read('exitOnDrain', (r) => asBool(r, problems), DEFAULTS.exitOnDrain);

  const apiKeyRaw = pick('backendApiKey');
  const backendApiKey = apiKeyRaw ? asString(apiKeyRaw, problems) || undefined : undefined;
  if (apiKeyRaw && backendApiKey) checkHeaderSafe(apiKeyRaw, backendApiKey, 'the authorization header', problems);

  const probe = read('probe', (r) => asBool(r, problems), DEFAULTS.probe);
  const priorityRaw = pick('priority');
  const priority = priorityRaw ? asNonNegativeInt(priorityRaw, problems) : undefined;
  const insecureSkipVerify = read('insecureSkipVerify', (r) => asBool(r, problems), DEFAULTS.insecureSkipVerify);
  const caRaw = pick('caFile');
  const caFile = caRaw ? asString(caRaw, problems) || undefined : undefined;
  const extraCaCertsFile = env.NODE_EXTRA_CA_CERTS?.trim() || undefined;
  if (caRaw && caFile) {
    // Read now so a wrong path is a configuration error, not a TLS failure at every reconnect.
    try {
      readPemCertificates(caFile, caRaw.source);
      if (extraCaCertsFile) readPemCertificates(extraCaCertsFile, 'NODE_EXTRA_CA_CERTS');
    } catch (e) {
      problems.push((e as Error).message);
    }
  }
  const proxyEnv = proxySettingsFromEnv(env);
  problems.push(...proxyEnv.problems);

  const modelLifecycle = read('modelLifecycle', (r) => asBool(r, problems), DEFAULTS.modelLifecycle);
  const runner = read('runner', (r) => {
    const s = asString(r, problems)?.toLowerCase();
    if (s !== undefined && !(RUNNER_TYPES as readonly string[]).includes(s)) {
      problems.push(`${r.source} must be one of ${RUNNER_TYPES.join(', ')}, got "${s}"`);
      return undefined;
    }
    return s as RunnerChoice | undefined;
  }, DEFAULTS.runner);
  const lifecycleTimeoutMs = seconds('lifecycleTimeoutMs', DEFAULTS.lifecycleTimeoutSecs, false);
  const loraRaw = pick('loraDir');
  const loraDir = loraRaw ? asString(loraRaw, problems) || undefined : undefined;
  if (loraRaw && loraDir !== undefined && !loraDir.startsWith('/')) {
    problems.push(`${loraRaw.source} must be an absolute path (as the vLLM server sees it), got "${loraDir}"`);
  }

  if (problems.length > 0) throw new WorkerConfigError(problems);

  const backendUrl = normalizeBackendUrl(backend);

  return {
    help: false,
    version: false,
    config: {
      proxyUrl: toWebSocketBase(proxy),
      workerSecret,
      provider,
      backendUrl,
      backendApiKey,
      discoverModels: models.discover,
      models: models.models,
      workerName,
      maxConcurrency,
      capabilities,
      logLevel,
      drainTimeoutMs,
      exitOnDrain,
      heartbeatIntervalMs,
      reconnectMinMs,
      reconnectMaxMs,
      modelsPollIntervalMs,
      probe,
      priority,
      caFile,
      extraCaCertsFile,
      insecureSkipVerify,
      ...proxyEnv.settings,
      modelLifecycle,
      runner,
      lifecycleTimeoutMs,
      loraDir,
    },
  };
}

function normalizeBackendUrl(url: URL): string {
  const base = stripTrailingSlashes(`${url.protocol}//${url.host}${url.pathname}`);
  return base.endsWith('/v1') ? base.slice(0, -3) : base;
}

/** The WebSocket URL the daemon dials. */
export function connectUrl(config: Pick<WorkerConfig, 'proxyUrl' | 'provider'>): string {
  return `${config.proxyUrl}/v1/worker/connect?provider=${encodeURIComponent(config.provider)}`;
}

/** A full config for programmatic use: defaults for everything not given. */
export function workerConfig(partial: Partial<WorkerConfig> & Pick<WorkerConfig, 'workerSecret'>): WorkerConfig {
  return {
    proxyUrl: toWebSocketBase(new URL(DEFAULTS.proxyUrl)),
    provider: DEFAULTS.provider,
    backendUrl: DEFAULTS.backendUrl,
    discoverModels: partial.models === undefined,
    models: [],
    workerName: hostname(),
    maxConcurrency: DEFAULTS.maxConcurrency,
    capabilities: {},
    logLevel: DEFAULTS.logLevel,
    drainTimeoutMs: DEFAULTS.drainTimeoutSecs * 1000,
    exitOnDrain: DEFAULTS.exitOnDrain,
    heartbeatIntervalMs: DEFAULTS.heartbeatIntervalSecs * 1000,
    reconnectMinMs: DEFAULTS.reconnectMinSecs * 1000,
    reconnectMaxMs: DEFAULTS.reconnectMaxSecs * 1000,
    modelsPollIntervalMs: DEFAULTS.modelsPollIntervalSecs * 1000,
    probe: DEFAULTS.probe,
    insecureSkipVerify: DEFAULTS.insecureSkipVerify,
    modelLifecycle: DEFAULTS.modelLifecycle,
    runner: DEFAULTS.runner,
    lifecycleTimeoutMs: DEFAULTS.lifecycleTimeoutSecs * 1000,
    ...partial,
    ...(partial.proxyUrl ? { proxyUrl: toWebSocketBase(new URL(partial.proxyUrl)) } : {}),
    ...(partial.backendUrl ? { backendUrl: normalizeBackendUrl(new URL(partial.backendUrl)) } : {}),
  };
}
