import { accessSync, constants, readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { isIP } from 'node:net';
import { parseDatabaseUrl } from '../common/database-url';
import { validateRedisUrl } from '../common/redis-url';
import { parse as parseYaml } from 'yaml';
import { AppConfig, ProviderDefaults } from './app-config';
import { readRoutingConfig } from './sections/routing';
import { readTenancyConfig } from './sections/tenancy';
import { readQueueConfig } from './sections/queue';
import { readUsageConfig } from './sections/usage';
import { readTasksConfig } from './sections/tasks';
import { API_KEYS_YAML_KEYS, readApiKeysConfig } from './sections/api-keys';
import { PROVIDER_NAME, readProviders } from './sections/providers';
import { PROVIDER_DEFAULT_SETTINGS, PROVIDER_LIST_SETTINGS, SERVER_SETTINGS, WORKER_RECORD_SETTINGS } from './sections/server';
import { TENANCY_SETTINGS } from './sections/tenancy';
import { SECTION_GROUPS } from './settings';
import { read, yamlKeys } from './setting';
import { readConnectionConfig } from './sections/connection';
import { readArtifactsConfig } from './sections/artifacts';
import { readGovernanceConfig } from './sections/governance';
import { readLifecycleConfig } from './sections/lifecycle';
import { readTelemetryConfig } from './sections/telemetry';
import { readOidcConfig } from './sections/auth';
import { readClusterConfig } from './sections/cluster';
import { Env, Reader, Yaml } from '../common/config-reader';

/** Raised once with every bad key, so an operator fixes them all in one go. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration: ${problems.join('; ')}`);
    this.name = 'ConfigError';
  }
}

const S = SERVER_SETTINGS.settings;
const P = PROVIDER_DEFAULT_SETTINGS.settings;
const W = WORKER_RECORD_SETTINGS.settings;
/** Top-level YAML keys read by readers of their own: the sections, `server:` itself, `providers`, `tenants` and the API keys' settings. */
const TOP_LEVEL_KEYS_READ_ELSEWHERE = [
  ...yamlKeys(PROVIDER_LIST_SETTINGS),
  'server',
  'auth',
  ...SECTION_GROUPS.map((g) => g.section),
  ...yamlKeys(TENANCY_SETTINGS),
  ...API_KEYS_YAML_KEYS,
];

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
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

/** `TLS_CERT_FILE` and `TLS_KEY_FILE`: both or neither, and readable at boot. */
function readTls(certFile: string | undefined, keyFile: string | undefined, problems: string[]): AppConfig['tls'] {
  if (!certFile && !keyFile) return undefined;
  if (!certFile || !keyFile) {
    problems.push('TLS_CERT_FILE and TLS_KEY_FILE go together: set both to serve HTTPS, or neither');
    return undefined;
  }
  for (const [name, file] of [
    ['TLS_CERT_FILE', certFile],
    ['TLS_KEY_FILE', keyFile],
  ]) {
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
  const origins = value
    .split(',')
    .map((o) => o.trim())
    .filter(Boolean);
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
  const configFile = env[S.configFile.env!] || undefined;
  const file = configFile ? readConfigFile(configFile, problems) : {};
  const server = (file.server && typeof file.server === 'object' ? file.server : {}) as Yaml;
  // Keys read by other readers are known from the start; the top-level reader adds the ones it reads.
  const r = new Reader(env, { ...file, ...server }, '', TOP_LEVEL_KEYS_READ_ELSEWHERE);

  const listen = parseListenAddr(read(r, env, S.listenAddr), problems);
  const logLevel = read(r, env, S.logLevel).toLowerCase();
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) {
    problems.push(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  }

  const defaults: ProviderDefaults = {
    maxQueueLen: read(r, env, P.maxQueueLen),
    queueTimeoutMs: read(r, env, P.queueTimeout),
    requestTimeoutMs: read(r, env, P.requestTimeout),
    maxModelsPerWorker: read(r, env, P.maxModelsPerWorker),
  };

  const providers = readProviders(file, defaults, problems);
  const defaultProviderName = read(r, env, S.providerName);
  if (!PROVIDER_NAME.test(defaultProviderName)) {
    problems.push(`PROVIDER_NAME must match ${PROVIDER_NAME.source}, got "${defaultProviderName}"`);
  }
  const workerSecret = env[S.workerSecret.env!] || undefined;
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

  const heartbeatIntervalMs = read(r, env, S.heartbeatInterval);
  const heartbeatTimeoutMs = read(r, env, S.heartbeatTimeout);

  const routing = readRoutingConfig(env, file.routing, problems);
  const tenancy = readTenancyConfig(env, file.tenants, problems);
  const queue = readQueueConfig(env, file.queue, problems);
  const usage = readUsageConfig(env, file.usage, problems);
  const apiKeys = readApiKeysConfig(env, { ...file, ...server }, problems);
  const artifacts = readArtifactsConfig(env, file.artifacts, problems);
  const tasks = readTasksConfig(env, file.tasks, problems);
  const governance = readGovernanceConfig(env, file.governance, problems);
  const lifecycle = readLifecycleConfig(env, file.lifecycle, problems);
  const telemetry = readTelemetryConfig(env, file.telemetry, problems);
  const oidc = readOidcConfig(env, file.auth, problems);
  const instanceId = read(r, env, W.instanceId);
  const databaseUrl = read(r, env, S.databaseUrl);
  const cluster = readClusterConfig(env, file.cluster, databaseUrl, problems);
  const ownRedisUrl = read(r, env, S.redisUrl) || undefined;
  const config: AppConfig = {
    listenHost: listen.host,
    listenPort: listen.port,
    providers,
    providerDefaults: defaults,
    defaultProviderName,
    heartbeatIntervalMs,
    heartbeatTimeoutMs,
    registerTimeoutMs: read(r, env, S.registerTimeout),
    adminToken: read(r, env, S.adminToken),
    adminAuthFailureLimit: read(r, env, S.adminAuthFailureLimit),
    databaseUrl,
    // Cluster mode shares its Redis with the rate limits unless REDIS_URL names another server.
    redisUrl: ownRedisUrl ?? cluster.redisUrl,
    configFile,
    logLevel: logLevel as AppConfig['logLevel'],
    maxBodyBytes: read(r, env, S.maxBodyBytes),
    maxStreamBytes: read(r, env, S.maxStreamBytes),
    connections: readConnectionConfig(r, env, problems),
    maxRequeues: routing.maxRetries ?? read(r, env, S.maxRequeues),
    cancelGraceMs: read(r, env, S.cancelGrace),
    slowClientTimeoutMs: read(r, env, S.slowClientTimeout),
    streamClientBufferBytes: read(r, env, S.streamClientBufferBytes),
    maxBufferedBytes: read(r, env, S.maxBufferedBytes),
    rejectLegacyWorkers: read(r, env, S.rejectLegacyWorkers),
    metricsPort: readMetricsPort(read(r, env, S.metricsPort), problems),
    metricsEnabled: read(r, env, S.enableMetrics),
    modelsRefreshIntervalMs: read(r, env, S.modelsRefreshInterval),
    shutdownDrainTimeoutMs: read(r, env, S.shutdownDrainTimeout),
    shutdownDelayMs: read(r, env, S.shutdownDelay),
    shutdownFlushTimeoutMs: read(r, env, S.shutdownFlushTimeout),
    authLimiter: {
      maxFailures: read(r, env, S.authFailureLimit),
      windowMs: read(r, env, S.authFailureWindow),
      blockMs: read(r, env, S.authBlock),
      trustedProxies: read(r, env, S.trustedProxies)
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    },
    heartbeatFlushIntervalMs: read(r, env, W.heartbeatFlushInterval),
    staleSweepIntervalMs: read(r, env, W.staleSweepInterval),
    workerRecordRetentionMs: read(r, env, W.workerRecordRetention),
    recentWorkerWindowMs: read(r, env, W.recentWorkerWindow),
    instanceId: instanceId ?? `gw-${randomUUID().slice(0, 8)}`,
    routing,
    corsOrigins: readCorsOrigins(read(r, env, S.corsOrigins), problems),
    tls: readTls(read(r, env, S.tlsCertFile), read(r, env, S.tlsKeyFile), problems),
    tenancy,
    queue,
    usage,
    apiKeys,
    artifacts,
    tasks,
    governance,
    lifecycle,
    telemetry,
    cluster,
    ...(oidc ? { oidc } : {}),
  };

  if (heartbeatTimeoutMs <= heartbeatIntervalMs && !r.problems.some((p) => p.startsWith('HEARTBEAT'))) {
    problems.push('HEARTBEAT_TIMEOUT_SECS must be greater than HEARTBEAT_INTERVAL_SECS');
  }
  try {
    parseDatabaseUrl(config.databaseUrl);
  } catch (e) {
    problems.push(`${(e as Error).message} (got "${config.databaseUrl.replace(/\/\/[^@]*@/, '//***@')}")`);
  }
  // CLUSTER_REDIS_URL is checked by its own section, under its own name.
  if (ownRedisUrl !== undefined) {
    try {
      validateRedisUrl(ownRedisUrl);
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

/** `METRICS_PORT`: unset or empty = /metrics stays on the client port; else a port number (0 = any free port). */
function readMetricsPort(value: string | undefined, problems: string[]): number | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const port = Number(value.trim());
  if (!/^\d{1,5}$/.test(value.trim()) || port > 65535) {
    problems.push(`METRICS_PORT must be a port number 0-65535, got "${value}"`);
    return undefined;
  }
  return port;
}
