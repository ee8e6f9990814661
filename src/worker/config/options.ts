import { RUNNER_TYPES, RunnerChoice } from '../models/lifecycle/types';
import { LOG_LEVELS, LogLevel } from '../logger';
import { WorkerConfig } from './types';

export type Kind = 'string' | 'url' | 'list' | 'int' | 'uint' | 'seconds' | 'bool' | 'level' | 'capabilities';

export interface OptionSpec {
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
  {
    key: 'config',
    flag: 'config',
    env: 'WORKER_CONFIG',
    kind: 'string',
    value: 'PATH',
    help: 'YAML or JSON file with any of the settings below (snake_case keys).',
  },
  {
    key: 'proxyUrl',
    flag: 'proxy-url',
    env: 'PROXY_URL',
    file: 'proxy_url',
    kind: 'url',
    value: 'URL',
    defaultText: 'http://127.0.0.1:8080',
    help: 'Switchboard gateway base URL; http(s) is turned into ws(s). The daemon dials <url>/v1/worker/connect?provider=<name>. Several, comma-separated (a,b,c): the replicas of a cluster, tried in turn, moving to the next on a close or a refused connection.',
  },
  {
    key: 'workerSecret',
    flag: 'worker-secret',
    env: 'WORKER_SECRET',
    file: 'worker_secret',
    kind: 'string',
    value: 'SECRET',
    defaultText: 'required',
    help: "The provider's worker secret, sent in the x-worker-secret header (so printable ASCII: no control characters or non-Latin letters). Prefer the env var: flags show up in `ps`.",
  },
  {
    key: 'provider',
    flag: 'provider',
    env: 'PROVIDER_NAME',
    file: 'provider',
    kind: 'string',
    value: 'NAME',
    defaultText: 'local',
    help: 'Provider (worker pool) to join.',
  },
  {
    key: 'backendUrl',
    flag: 'backend-url',
    env: 'BACKEND_URL',
    file: 'backend_url',
    kind: 'url',
    value: 'URL',
    defaultText: 'http://127.0.0.1:8000',
    help: 'OpenAI-compatible backend (llama-server, vLLM, Ollama …). A trailing /v1 is dropped: endpoint paths already start with /v1.',
  },
  {
    key: 'backendApiKey',
    flag: 'backend-api-key',
    env: 'BACKEND_API_KEY',
    file: 'backend_api_key',
    kind: 'string',
    value: 'KEY',
    defaultText: 'none: client headers are forwarded',
    help: "Key the backend expects (e.g. vLLM --api-key); replaces the client's authorization / x-api-key on backend calls.",
  },
  {
    key: 'models',
    flag: 'models',
    env: 'MODELS',
    file: 'models',
    kind: 'list',
    value: 'LIST',
    defaultText: '*',
    help: "Comma-separated model names to register with, or * to register the ids the backend lists at GET /v1/models (re-read every --models-poll-interval). Either way a models_refresh from the gateway re-reads the backend's list; if the backend cannot answer, the current list is kept (and the failure logged).",
  },
  {
    key: 'workerName',
    flag: 'worker-name',
    env: 'WORKER_NAME',
    file: 'worker_name',
    kind: 'string',
    value: 'NAME',
    defaultText: 'the host name',
    help: 'Name shown in the gateway.',
  },
  {
    key: 'maxConcurrency',
    flag: 'max-concurrency',
    env: 'MAX_CONCURRENCY',
    file: 'max_concurrency',
    kind: 'int',
    value: 'N',
    defaultText: '1',
    help: 'Requests run against the backend at once. Extra requests the gateway assigns wait in a local queue of the same size; beyond that they get 503.',
  },
  {
    key: 'capabilities',
    flag: 'capability',
    env: 'CAPABILITIES',
    file: 'capabilities',
    kind: 'capabilities',
    value: 'MODEL:CAPS',
    help: "Capability hints for one model, repeatable: --capability 'llama3.1:8b:vision,tools,json_mode,context_length=8192' (the last ':' separates the model). Env: entries separated by ';'. File: a map model -> {vision, tools, json_mode, context_length}.",
  },
  {
    key: 'logLevel',
    flag: 'log-level',
    env: 'LOG_LEVEL',
    file: 'log_level',
    kind: 'level',
    value: 'LEVEL',
    defaultText: 'info',
    help: `One of ${LOG_LEVELS.join(', ')}. JSON lines on stderr.`,
  },
  {
    key: 'drainTimeoutMs',
    flag: 'drain-timeout',
    env: 'DRAIN_TIMEOUT_SECS',
    file: 'drain_timeout_secs',
    kind: 'seconds',
    value: 'SECS',
    defaultText: '30',
    help: 'On SIGTERM/SIGINT: how long in-flight requests may run before they are aborted.',
  },
  {
    key: 'exitOnDrain',
    flag: 'exit-on-drain',
    env: 'EXIT_ON_DRAIN',
    file: 'exit_on_drain',
    kind: 'bool',
    defaultText: 'false',
    help: "After the gateway's graceful_shutdown has drained this worker: exit 0 instead of reconnecting. --no-exit-on-drain turns it off.",
  },
  {
    key: 'heartbeatIntervalMs',
    flag: 'heartbeat-interval',
    env: 'HEARTBEAT_INTERVAL_SECS',
    file: 'heartbeat_interval_secs',
    kind: 'seconds',
    value: 'SECS',
    defaultText: '15',
    help: "The gateway's ping interval. Hearing nothing for 3x this long means the link is dead: reconnect.",
  },
  {
    key: 'reconnectMinMs',
    flag: 'reconnect-min',
    env: 'RECONNECT_MIN_SECS',
    file: 'reconnect_min_secs',
    kind: 'seconds',
    value: 'SECS',
    defaultText: '1',
    help: 'First reconnect delay; doubles on each failed attempt (plus up to 20% jitter).',
  },
  {
    key: 'reconnectMaxMs',
    flag: 'reconnect-max',
    env: 'RECONNECT_MAX_SECS',
    file: 'reconnect_max_secs',
    kind: 'seconds',
    value: 'SECS',
    defaultText: '30',
    help: 'Largest reconnect delay.',
  },
  {
    key: 'modelsPollIntervalMs',
    flag: 'models-poll-interval',
    env: 'MODELS_POLL_INTERVAL_SECS',
    file: 'models_poll_interval_secs',
    kind: 'seconds',
    value: 'SECS',
    defaultText: '30',
    help: 'With --models *: how often to re-read the backend model list and send models_update when it changed. 0 = only on models_refresh.',
  },
  {
    key: 'probe',
    flag: 'probe',
    env: 'PROBE_BACKEND',
    file: 'probe',
    kind: 'bool',
    defaultText: 'true',
    help: 'At start and on every model refresh, ask the backend (llama-server /props, vLLM /v1/models, Ollama /api/show, a POST {} per endpoint) for context length, vision, tools and the endpoints it serves, and advertise them. --no-probe (or --probe=false) advertises only --capability. Explicit --capability values always win.',
  },
  {
    key: 'priority',
    flag: 'priority',
    env: 'PRIORITY',
    file: 'priority',
    kind: 'uint',
    value: 'N',
    defaultText: "the gateway's",
    help: 'Routing priority for this worker, an integer >= 0; lower is preferred.',
  },
  {
    key: 'caFile',
    flag: 'ca-file',
    env: 'CA_FILE',
    file: 'ca_file',
    kind: 'string',
    value: 'PATH',
    help: 'PEM file with a private CA to trust (for the gateway, an https backend or an https proxy), in addition to the public roots and NODE_EXTRA_CA_CERTS.',
  },
  {
    key: 'insecureSkipVerify',
    flag: 'insecure-skip-verify',
    env: 'INSECURE_SKIP_VERIFY',
    file: 'insecure_skip_verify',
    kind: 'bool',
    defaultText: 'false',
    help: 'Do not verify TLS certificates (gateway, https backend, https proxy). For tests only: anyone on the path can then read the worker secret and every prompt.',
  },
  {
    key: 'modelLifecycle',
    flag: 'model-lifecycle',
    env: 'MODEL_LIFECYCLE',
    file: 'model_lifecycle',
    kind: 'bool',
    defaultText: 'true',
    help: 'Ask the gateway for the model_lifecycle feature and carry out the governed model load, unload and cache flush it relays. --no-model-lifecycle does not ask: the gateway then sends none to this worker.',
  },
  {
    key: 'runner',
    flag: 'runner',
    env: 'RUNNER_TYPE',
    file: 'runner',
    kind: 'string',
    value: 'TYPE',
    defaultText: 'auto',
    help: `Which server the backend is, for lifecycle operations: ${RUNNER_TYPES.join(', ')}. auto takes what probing detected (a backend serving GET /v1/capabilities is driven through the runner API); openai-compatible answers every operation unsupported.`,
  },
  {
    key: 'lifecycleTimeoutMs',
    flag: 'lifecycle-timeout',
    env: 'LIFECYCLE_TIMEOUT_SECS',
    file: 'lifecycle_timeout_secs',
    kind: 'seconds',
    value: 'SECS',
    defaultText: '3600',
    help: 'Deadline of one lifecycle operation, a model download included; past it the operation is reported failed.',
  },
  {
    key: 'loraDir',
    flag: 'lora-dir',
    env: 'LORA_DIR',
    file: 'lora_dir',
    kind: 'string',
    value: 'PATH',
    help: 'vLLM only: absolute path, as the vLLM server sees it, of the directory holding LoRA adapters. A model_load for a model vLLM does not serve then loads <PATH>/<model id> as a LoRA adapter, only if it exists at that path on this host too and resolves (symlinks followed) inside PATH; unset, such loads are unsupported.',
  },
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

export const PROVIDER_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

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
