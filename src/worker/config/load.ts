import { hostname } from 'node:os';
import { ModelCapabilities } from '../../protocol';
import { RUNNER_TYPES, RunnerChoice } from '../models/lifecycle/types';
import { LOG_LEVELS, LogLevel } from '../logger';
import { proxySettingsFromEnv } from '../network/proxy-env';
import { readPemCertificates } from '../network/tls-trust';
import { DEFAULTS, OptionSpec, PROVIDER_NAME } from './options';
import { Env, Raw, envLayer, fileLayer, parseArgs } from './sources';
import { WorkerConfig, WorkerConfigError } from './types';
import {
  asBool,
  asCapabilities,
  asModelList,
  asNonNegativeInt,
  asPositiveInt,
  asSeconds,
  asString,
  asUrl,
  asUrlList,
  checkHeaderSafe,
  normalizeBackendUrl,
  toWebSocketBase,
} from './values';

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

  const proxies = read('proxyUrl', (r) => asUrlList(r, problems, ['http:', 'https:', 'ws:', 'wss:']), [new URL(DEFAULTS.proxyUrl)]);
  const backend = read('backendUrl', (r) => asUrl(r, problems, ['http:', 'https:']), new URL(DEFAULTS.backendUrl));

  const secretRaw = pick('workerSecret');
  const workerSecret = secretRaw ? (asString(secretRaw, problems) ?? '') : '';
  if (!workerSecret) {
    problems.push('a worker secret is required: set WORKER_SECRET (or pass --worker-secret, or worker_secret in the config file)');
  } else {
    checkHeaderSafe(secretRaw as Raw, workerSecret, 'the x-worker-secret header', problems);
  }

  const provider = read(
    'provider',
    (r) => {
      const s = asString(r, problems);
      if (s !== undefined && !PROVIDER_NAME.test(s)) {
        problems.push(`${r.source} must be 1-64 letters, digits, '.', '_' or '-', got "${s}"`);
        return undefined;
      }
      return s;
    },
    DEFAULTS.provider,
  );

  const models = read('models', (r) => asModelList(r, problems), { discover: true, models: [] as string[] });
  const workerName = read(
    'workerName',
    (r) => {
      const s = asString(r, problems);
      if (s === '') {
        problems.push(`${r.source} must not be empty`);
        return undefined;
      }
      return s;
    },
    hostname(),
  );
  const maxConcurrency = read('maxConcurrency', (r) => asPositiveInt(r, problems), DEFAULTS.maxConcurrency);

  // Capabilities merge per model across layers (a flag for one model keeps the file's others).
  const capabilities: Record<string, ModelCapabilities> = {};
  for (const l of [file, envValues, args.layer]) {
    const raw = l.capabilities;
    if (raw) Object.assign(capabilities, asCapabilities(raw, problems) ?? {});
  }

  const logLevel = read(
    'logLevel',
    (r) => {
      const s = asString(r, problems)?.toLowerCase();
      if (s !== undefined && !(LOG_LEVELS as readonly string[]).includes(s)) {
        problems.push(`${r.source} must be one of ${LOG_LEVELS.join(', ')}, got "${s}"`);
        return undefined;
      }
      return s as LogLevel | undefined;
    },
    DEFAULTS.logLevel,
  );

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
  const runner = read(
    'runner',
    (r) => {
      const s = asString(r, problems)?.toLowerCase();
      if (s !== undefined && !(RUNNER_TYPES as readonly string[]).includes(s)) {
        problems.push(`${r.source} must be one of ${RUNNER_TYPES.join(', ')}, got "${s}"`);
        return undefined;
      }
      return s as RunnerChoice | undefined;
    },
    DEFAULTS.runner,
  );
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
      proxyUrl: toWebSocketBase(proxies[0]),
      proxyUrls: proxies.map(toWebSocketBase),
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

/** The WebSocket URL the daemon dials (the first gateway when several are given). */
export function connectUrl(config: Pick<WorkerConfig, 'proxyUrl' | 'provider'>): string {
  return `${config.proxyUrl}/v1/worker/connect?provider=${encodeURIComponent(config.provider)}`;
}

/** Every gateway's WebSocket URL, in the order the daemon tries them (one when a single URL is given). */
export function connectUrls(config: Pick<WorkerConfig, 'proxyUrl' | 'proxyUrls' | 'provider'>): string[] {
  const bases = config.proxyUrls && config.proxyUrls.length > 0 ? config.proxyUrls : [config.proxyUrl];
  return bases.map((proxyUrl) => connectUrl({ proxyUrl, provider: config.provider }));
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
    ...(partial.proxyUrls && partial.proxyUrls.length > 0
      ? { proxyUrl: toWebSocketBase(new URL(partial.proxyUrls[0])), proxyUrls: partial.proxyUrls.map((u) => toWebSocketBase(new URL(u))) }
      : {}),
    ...(partial.backendUrl ? { backendUrl: normalizeBackendUrl(new URL(partial.backendUrl)) } : {}),
  };
}
