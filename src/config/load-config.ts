import { accessSync, constants, readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { isIP } from 'node:net';
import { isWellFormedSecretHash } from '../common/secret-hash';
import { parseDatabaseUrl } from '../common/database-url';
import { validateRedisUrl } from '../common/redis-url';
import { parse as parseYaml } from 'yaml';
import { AppConfig, ProviderConfig, ProviderDefaults } from './app-config';
import { parseCapabilityDeclarations, readRoutingConfig } from './sections/routing';
import { readTenancyConfig } from './sections/tenancy';
import { readQueueConfig } from './sections/queue';
import { readUsageConfig } from './sections/usage';
import { readTasksConfig } from './sections/tasks';
import { API_KEYS_YAML_KEYS, readApiKeysConfig } from './sections/api-keys';
import { readConnectionConfig } from './sections/connection';
import { readArtifactsConfig } from './sections/artifacts';
import { readGovernanceConfig } from './sections/governance';
import { readLifecycleConfig } from './sections/lifecycle';
import { checkNumber, Env, NumberOpts, Reader, TIMER, TIMER_OR_ZERO, toMillis, Yaml } from '../common/config-reader';

/** Raised once with every bad key, so an operator fixes them all in one go. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration: ${problems.join('; ')}`);
    this.name = 'ConfigError';
  }
}


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

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
const PROVIDER_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const HOSTNAME = /^[A-Za-z0-9]([A-Za-z0-9-]{0,62})(\.[A-Za-z0-9]([A-Za-z0-9-]{0,62}))*$/;
const INSTANCE_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

function parseListenAddr(value: string, problems: string[]): { host: string; port: number } {
  const m = /^(\[[^\]]+\]|[^:]*):(\d{1,5})$/.exec(value.trim());
  const port = m ? Number(m[2]) : NaN;
  if (!m || port > 65535) {
    problems.push(`LISTEN_ADDR must be host:port, got "${value}"`);
    return { host: '127.0.0.1', port: 8080 };
  }
  const host = m[1].replace(/^\[|\]$/g, '') || '0.0.0.0';
  const looksNumeric = /^[\d.]+$/.test(host);
  if ((looksNumeric && isIP(host) !== 4) || (!looksNumeric && isIP(host) === 0 && !HOSTNAME.test(host))) {
    problems.push(`LISTEN_ADDR host "${host}" is not an IP address or host name`);
  }
  return { host, port };
}

function readConfigFile(path: string, problems: string[]): Yaml {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    problems.push(`CONFIG_FILE "${path}" cannot be read: ${(e as Error).message}`);
    return {};
  }
  try {
    const parsed: unknown = parseYaml(text);
    if (parsed === null || parsed === undefined) return {};
    if (typeof parsed !== 'object' || Array.isArray(parsed)) {
      problems.push(`CONFIG_FILE "${path}" must hold a YAML mapping`);
      return {};
    }
    return parsed as Yaml;
  } catch (e) {
    problems.push(`CONFIG_FILE "${path}" is not valid YAML: ${(e as Error).message}`);
    return {};
  }
}

function readProviders(file: Yaml, defaults: ProviderDefaults, problems: string[]): ProviderConfig[] {
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

/** `TLS_CERT_FILE` and `TLS_KEY_FILE`: both or neither, and readable at boot. */
function readTls(certFile: string | undefined, keyFile: string | undefined, problems: string[]): AppConfig['tls'] {
  if (!certFile && !keyFile) return undefined;
  if (!certFile || !keyFile) {
    problems.push('TLS_CERT_FILE and TLS_KEY_FILE go together: set both to serve HTTPS, or neither');
    return undefined;
  }
  for (const [name, file] of [['TLS_CERT_FILE', certFile], ['TLS_KEY_FILE', keyFile]]) {
    try {
      accessSync(file, constants.R_OK);
    } catch (e) {
      problems.push(`${name} "${file}" cannot be read: ${(e as Error).message}`);
    }
  }
  return { certFile, keyFile };
}

/** `CORS_ORIGINS`: comma-separated origins (`https://dash.example.com`) or `*`. */
function readCorsOrigins(value: string, problems: string[]): string[] {
  const origins = value.split(',').map((o) => o.trim()).filter(Boolean);
  for (const o of origins) {
    if (o === '*') continue;
    let ok = false;
    try {
      const u = new URL(o);
      ok = (u.protocol === 'http:' || u.protocol === 'https:') && u.origin === o;
    } catch {
      ok = false;
    }
    if (!ok) problems.push(`CORS_ORIGINS entry "${o}" must be an origin such as https://dashboard.example.com (scheme://host[:port], no path) or *`);
  }
  return origins;
}

/** What a configuration was built from, for a reload (`config-reload.ts`) to build the next one alike. */
export interface ConfigOrigin {
  /** A copy of the environment it was read from: variables keep winning over the file at a reload. */
  env: Env;
  /** No INSTANCE_ID was set (env or file): `instanceId` is a random default, not a setting. */
  instanceIdGenerated: boolean;
}

const origins = new WeakMap<AppConfig, ConfigOrigin>();

/** The environment (and defaults) a configuration returned by `loadConfig` was built from. */
export function configOrigin(config: AppConfig): ConfigOrigin | undefined {
  return origins.get(config);
}

/**
 * Builds the configuration from environment variables and the optional YAML file named by
 * CONFIG_FILE. Environment variables override the file. Throws ConfigError naming every bad key.
 */
export function loadConfig(env: Env = process.env): AppConfig {
  const problems: string[] = [];
  const configFile = env.CONFIG_FILE || undefined;
  const file = configFile ? readConfigFile(configFile, problems) : {};
  const server = (file.server && typeof file.server === 'object' ? file.server : {}) as Yaml;
  const r = new Reader(env, { ...file, ...server }, '', ['providers', 'server', 'routing', 'tenants', 'queue', 'usage', 'artifacts', 'tasks', 'governance', 'lifecycle', ...API_KEYS_YAML_KEYS]);

  const listen = parseListenAddr(r.string('LISTEN_ADDR', 'listen_addr', '127.0.0.1:8080'), problems);
  const logLevel = r.string('LOG_LEVEL', 'log_level', 'info').toLowerCase();
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) {
    problems.push(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  }

  const defaults: ProviderDefaults = {
    maxQueueLen: r.number('MAX_QUEUE_LEN', 'max_queue_len', 100, { min: 0, integer: true }),
    queueTimeoutMs: r.seconds('QUEUE_TIMEOUT_SECS', 'queue_timeout_secs', 30, TIMER),
    requestTimeoutMs: r.seconds('REQUEST_TIMEOUT_SECS', 'request_timeout_secs', 300, TIMER),
    maxModelsPerWorker: r.number('MAX_MODELS_PER_WORKER', 'max_models_per_worker', 256, { min: 1, integer: true }),
  };

  const providers = readProviders(file, defaults, problems);
  const defaultProviderName = r.string('PROVIDER_NAME', 'provider_name', 'local');
  if (!PROVIDER_NAME.test(defaultProviderName)) {
    problems.push(`PROVIDER_NAME must match ${PROVIDER_NAME.source}, got "${defaultProviderName}"`);
  }
  const workerSecret = env.WORKER_SECRET || undefined;
  const existing = providers.find((p) => p.name === defaultProviderName);
  if (existing) {
    // WORKER_SECRET overrides the file's secret for the default provider.
    if (workerSecret) {
      existing.secret = workerSecret;
      existing.secretHash = undefined;
    }
  } else if (workerSecret || providers.length === 0) {
    providers.unshift({ name: defaultProviderName, secret: workerSecret, enabled: true, models: [], capabilities: {}, ...defaults });
  }

  const heartbeatIntervalMs = r.seconds('HEARTBEAT_INTERVAL_SECS', 'heartbeat_interval_secs', 15, TIMER);
  const heartbeatTimeoutMs = r.seconds('HEARTBEAT_TIMEOUT_SECS', 'heartbeat_timeout_secs', 45, TIMER);

  const routing = readRoutingConfig(env, file.routing, problems);
  const tenancy = readTenancyConfig(env, file.tenants, problems);
  const queue = readQueueConfig(env, file.queue, problems);
  const usage = readUsageConfig(env, file.usage, problems);
  const apiKeys = readApiKeysConfig(env, { ...file, ...server }, problems);
  const artifacts = readArtifactsConfig(env, file.artifacts, problems);
  const tasks = readTasksConfig(env, file.tasks, problems);
  const governance = readGovernanceConfig(env, file.governance, problems);
  const lifecycle = readLifecycleConfig(env, file.lifecycle, problems);
  const instanceId = r.string('INSTANCE_ID', 'instance_id');
  const config: AppConfig = {
    listenHost: listen.host,
    listenPort: listen.port,
    providers,
    providerDefaults: defaults,
    defaultProviderName,
    heartbeatIntervalMs,
    heartbeatTimeoutMs,
    registerTimeoutMs: r.seconds('REGISTER_TIMEOUT_SECS', 'register_timeout_secs', 10, TIMER),
    adminToken: env.ADMIN_TOKEN || env.MODELRELAY_ADMIN_TOKEN || undefined,
    adminAuthFailureLimit: r.number('ADMIN_AUTH_FAILURE_LIMIT', 'admin_auth_failure_limit', 10, { min: 1, integer: true }),
    databaseUrl: r.string('DATABASE_URL', 'database_url', 'sqlite:./data/switchboard.db'),
    redisUrl: r.string('REDIS_URL', 'redis_url') || undefined,
    configFile,
    logLevel: logLevel as AppConfig['logLevel'],
    maxBodyBytes: r.number('MAX_BODY_BYTES', 'max_body_bytes', 10 * 1024 * 1024, { min: 1, integer: true }),
    maxStreamBytes: r.number('MAX_STREAM_BYTES', 'max_stream_bytes', 256 * 1024 * 1024, { min: 1, integer: true }),
    connections: readConnectionConfig(r, problems),
    maxRequeues: routing.maxRetries ?? r.number('MAX_REQUEUES', 'max_requeues', 3, { min: 0, integer: true }),
    cancelGraceMs: r.seconds('CANCEL_GRACE_SECS', 'cancel_grace_secs', 10, TIMER_OR_ZERO),
    slowClientTimeoutMs: r.seconds('SLOW_CLIENT_TIMEOUT_SECS', 'slow_client_timeout_secs', 30, TIMER),
    streamClientBufferBytes: r.number('STREAM_CLIENT_BUFFER_BYTES', 'stream_client_buffer_bytes', 1024 * 1024, { min: 1, integer: true }),
    maxBufferedBytes: r.number('MAX_BUFFERED_BYTES', 'max_buffered_bytes', 256 * 1024 * 1024, { min: 1, integer: true }),
    rejectLegacyWorkers: r.bool('REJECT_LEGACY_WORKERS', 'reject_legacy_workers', false),
    modelsRefreshIntervalMs: r.seconds('MODELS_REFRESH_INTERVAL_SECS', 'models_refresh_interval_secs', 0, TIMER_OR_ZERO),
    shutdownDrainTimeoutMs: r.seconds('SHUTDOWN_DRAIN_TIMEOUT_SECS', 'shutdown_drain_timeout_secs', 30, TIMER_OR_ZERO),
    shutdownFlushTimeoutMs: r.seconds('SHUTDOWN_FLUSH_TIMEOUT_SECS', 'shutdown_flush_timeout_secs', 10, TIMER_OR_ZERO),
    authLimiter: {
      maxFailures: r.number('AUTH_FAILURE_LIMIT', 'auth_failure_limit', 5, { min: 1, integer: true }),
      windowMs: r.seconds('AUTH_FAILURE_WINDOW_SECS', 'auth_failure_window_secs', 60, TIMER),
      blockMs: r.seconds('AUTH_BLOCK_SECS', 'auth_block_secs', 60, TIMER),
      trustedProxies: (r.string('TRUSTED_PROXIES', 'trusted_proxies', '') ?? '')
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    },
    heartbeatFlushIntervalMs: r.seconds('HEARTBEAT_FLUSH_INTERVAL_SECS', 'heartbeat_flush_interval_secs', 5, TIMER),
    staleSweepIntervalMs: r.seconds('STALE_SWEEP_INTERVAL_SECS', 'stale_sweep_interval_secs', 60, TIMER),
    workerRecordRetentionMs: r.seconds('WORKER_RECORD_RETENTION_SECS', 'worker_record_retention_secs', 7 * 24 * 3600, { above: 0 }),
    recentWorkerWindowMs: r.seconds('RECENT_WORKER_WINDOW_SECS', 'recent_worker_window_secs', 300, { min: 0 }),
    instanceId: instanceId ?? `gw-${randomUUID().slice(0, 8)}`,
    routing,
    corsOrigins: readCorsOrigins(r.string('CORS_ORIGINS', 'cors_origins', ''), problems),
    tls: readTls(r.string('TLS_CERT_FILE', 'tls_cert_file'), r.string('TLS_KEY_FILE', 'tls_key_file'), problems),
    tenancy,
    queue,
    usage,
    apiKeys,
    artifacts,
    tasks,
    governance,
    lifecycle,
  };

  if (heartbeatTimeoutMs <= heartbeatIntervalMs && !r.problems.some((p) => p.startsWith('HEARTBEAT'))) {
    problems.push('HEARTBEAT_TIMEOUT_SECS must be greater than HEARTBEAT_INTERVAL_SECS');
  }
  try {
    parseDatabaseUrl(config.databaseUrl);
  } catch (e) {
    problems.push(`${(e as Error).message} (got "${config.databaseUrl.replace(/\/\/[^@]*@/, '//***@')}")`);
  }
  if (config.redisUrl !== undefined) {
    try {
      validateRedisUrl(config.redisUrl);
    } catch (e) {
      problems.push((e as Error).message);
    }
  }
  if (!INSTANCE_ID.test(config.instanceId)) problems.push(`INSTANCE_ID must match ${INSTANCE_ID.source}`);
  const unknownKeys = [...Object.keys(file), ...Object.keys(server)].filter((k) => !r.knownYamlKeys.has(k));
  for (const key of unknownKeys) problems.push(`${key} (config file) is not a setting`);
  problems.push(...r.problems);
  if (problems.length > 0) throw new ConfigError(problems);
  origins.set(config, { env: { ...env }, instanceIdGenerated: instanceId === undefined });
  return config;
}
