import { mkdtempSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { WorkerConfig, WorkerConfigError, connectUrl, connectUrls, helpText, loadWorkerConfig, OPTIONS } from './index';

function load(argv: string[], env: Record<string, string> = {}): WorkerConfig {
  const { config } = loadWorkerConfig(argv, env);
  if (!config) throw new Error('expected a config');
  return config;
}

function problems(argv: string[], env: Record<string, string> = {}): string[] {
  try {
    loadWorkerConfig(argv, env);
  } catch (e) {
    if (e instanceof WorkerConfigError) return e.problems;
    throw e;
  }
  throw new Error('expected a WorkerConfigError');
}

function writeTemp(name: string, text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'worker-config-'));
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

const SECRET_ENV = { WORKER_SECRET: 's3cret' };

describe('worker configuration', () => {
  it('uses the documented defaults when only the secret is given', () => {
    const c = load([], SECRET_ENV);
    expect(c).toEqual({
      proxyUrl: 'ws://127.0.0.1:8080',
      proxyUrls: ['ws://127.0.0.1:8080'],
      workerSecret: 's3cret',
      provider: 'local',
      backendUrl: 'http://127.0.0.1:8000',
      backendApiKey: undefined,
      discoverModels: true,
      models: [],
      workerName: hostname(),
      maxConcurrency: 1,
      capabilities: {},
      logLevel: 'info',
      drainTimeoutMs: 30_000,
      exitOnDrain: false,
      heartbeatIntervalMs: 15_000,
      reconnectMinMs: 1_000,
      reconnectMaxMs: 30_000,
      modelsPollIntervalMs: 30_000,
      probe: true,
      priority: undefined,
      caFile: undefined,
      extraCaCertsFile: undefined,
      insecureSkipVerify: false,
      modelLifecycle: true,
      runner: 'auto',
      lifecycleTimeoutMs: 3_600_000,
      loraDir: undefined,
    });
    expect(connectUrl(c)).toBe('ws://127.0.0.1:8080/v1/worker/connect?provider=local');
  });

  it('takes flags over env over the config file over defaults, value by value', () => {
    const file = writeTemp(
      'worker.yaml',
      ['worker_secret: from-file', 'provider: file-pool', 'worker_name: file-name', 'max_concurrency: 4', 'backend_url: http://file:1'].join('\n'),
    );
    const c = load(['--config', file, '--provider', 'flag-pool'], {
      WORKER_SECRET: 'from-env',
      PROVIDER_NAME: 'env-pool',
      WORKER_NAME: 'env-name',
    });
    expect(c.provider).toBe('flag-pool'); // flag > env > file
    expect(c.workerName).toBe('env-name'); // env > file
    expect(c.workerSecret).toBe('from-env');
    expect(c.maxConcurrency).toBe(4); // file > default
    expect(c.backendUrl).toBe('http://file:1');
    expect(c.reconnectMaxMs).toBe(30_000); // default
  });

  it('reads a JSON config file named by WORKER_CONFIG', () => {
    const file = writeTemp('worker.json', JSON.stringify({ worker_secret: 'j', models: ['a', 'b'], exit_on_drain: true }));
    const c = load([], { WORKER_CONFIG: file });
    expect(c.workerSecret).toBe('j');
    expect(c.models).toEqual(['a', 'b']);
    expect(c.discoverModels).toBe(false);
    expect(c.exitOnDrain).toBe(true);
  });

  it('turns http(s) proxy URLs into ws(s), strips trailing slashes and keeps a path prefix', () => {
    expect(load(['--proxy-url', 'https://gw.example.com/'], SECRET_ENV).proxyUrl).toBe('wss://gw.example.com');
    expect(load(['--proxy-url=http://gw:8080/switchboard///'], SECRET_ENV).proxyUrl).toBe('ws://gw:8080/switchboard');
    expect(load([], { ...SECRET_ENV, PROXY_URL: 'wss://gw:9443' }).proxyUrl).toBe('wss://gw:9443');
    const c = load(['--proxy-url', 'https://gw.example.com/', '--provider', 'gpu-a'], SECRET_ENV);
    expect(connectUrl(c)).toBe('wss://gw.example.com/v1/worker/connect?provider=gpu-a');
  });

  it('takes several gateway URLs (comma-separated or a YAML list), in order, each checked', () => {
    const c = load(['--proxy-url', 'http://gw-1:8080, https://gw-2:8443/,http://gw-1:8080'], SECRET_ENV);
    expect(c.proxyUrl).toBe('ws://gw-1:8080');
    expect(c.proxyUrls).toEqual(['ws://gw-1:8080', 'wss://gw-2:8443']);
    expect(connectUrls({ ...c, provider: 'gpu a' })).toEqual([
      'ws://gw-1:8080/v1/worker/connect?provider=gpu%20a',
      'wss://gw-2:8443/v1/worker/connect?provider=gpu%20a',
    ]);
    const file = writeTemp('cfg.yaml', 'proxy_url:\n  - http://a:1\n  - http://b:2\n');
    expect(load(['--config', file], SECRET_ENV).proxyUrls).toEqual(['ws://a:1', 'ws://b:2']);
    expect(() => load(['--proxy-url', 'http://a:1,ftp://b'], SECRET_ENV)).toThrow(/ftp:\/\/b/);
    expect(() => load(['--proxy-url', ' , '], SECRET_ENV)).toThrow(/at least one URL/);
    // One URL: exactly one connect URL, as before.
    expect(connectUrls(load([], SECRET_ENV))).toEqual(['ws://127.0.0.1:8080/v1/worker/connect?provider=local']);
  });

  it('drops a trailing /v1 from the backend URL because endpoint paths already carry it', () => {
    expect(load(['--backend-url', 'http://127.0.0.1:11434/v1/'], SECRET_ENV).backendUrl).toBe('http://127.0.0.1:11434');
  });

  it('parses the model list: names, de-duplicated, or * for discovery', () => {
    expect(load(['--models', ' llama3 , qwen2.5:7b,llama3,'], SECRET_ENV)).toMatchObject({
      discoverModels: false,
      models: ['llama3', 'qwen2.5:7b'],
    });
    expect(load([], { ...SECRET_ENV, MODELS: '*' })).toMatchObject({ discoverModels: true, models: [] });
  });

  it('parses repeatable --capability flags, splitting the model at the last colon', () => {
    const c = load(['--capability', 'llama3.1:8b:vision,tools,context_length=8192', '--capability=qwen:json_mode,vision=false'], SECRET_ENV);
    expect(c.capabilities).toEqual({
      'llama3.1:8b': { vision: true, tools: true, context_length: 8192 },
      qwen: { json_mode: true, vision: false },
    });
  });

  it('merges capabilities per model across file, env and flags', () => {
    const file = writeTemp('caps.yaml', 'capabilities:\n  a: {vision: true}\n  b: "tools,context_length=4096"\n');
    const c = load(['--config', file, '--capability', 'a:tools'], { ...SECRET_ENV, CAPABILITIES: 'c:json_mode; b:vision' });
    expect(c.capabilities).toEqual({ a: { tools: true }, b: { vision: true }, c: { json_mode: true } });
  });

  it('refuses capability values it would otherwise have to guess at, naming each, rather than rounding them', () => {
    const file = writeTemp(
      'caps.yaml',
      'capabilities:\n  a: {context_length: 0}\n  b: {context_length: 1.5}\n  c: {context_length: "8192"}\n  d: {vision: "yes", tools: 1}\n  e: {context_length: -3}\n',
    );
    expect(problems(['--config', file], SECRET_ENV)).toEqual([
      'capabilities (config file) "a".context_length must be a positive integer, got "0"',
      'capabilities (config file) "b".context_length must be a positive integer, got "1.5"',
      'capabilities (config file) "c".context_length must be a positive integer, got "8192"',
      'capabilities (config file) "d".vision must be true or false, got "yes"',
      'capabilities (config file) "d".tools must be true or false, got "1"',
      'capabilities (config file) "e".context_length must be a positive integer, got "-3"',
    ]);
    const flags = problems(
      ['--capability', 'a:context_length=0', '--capability', 'b:context_length=1.5', '--capability', 'c:vision=yes', '--capability', 'd:context_length'],
      SECRET_ENV,
    );
    expect(flags).toEqual([
      expect.stringContaining('context_length needs a positive integer'),
      expect.stringContaining('context_length needs a positive integer'),
      expect.stringContaining('vision must be true or false, got "yes"'),
      expect.stringContaining('context_length needs a positive integer'),
    ]);
    expect(load(['--capability', 'big:context_length=1000000000'], SECRET_ENV).capabilities).toEqual({ big: { context_length: 1e9 } });
  });

  it('accepts fractional seconds and booleans in the usual spellings', () => {
    const c = load(['--heartbeat-interval', '0.25', '--reconnect-min', '0.05', '--drain-timeout', '0', '--exit-on-drain'], SECRET_ENV);
    expect(c.heartbeatIntervalMs).toBe(250);
    expect(c.reconnectMinMs).toBe(50);
    expect(c.drainTimeoutMs).toBe(0);
    expect(c.exitOnDrain).toBe(true);
    expect(load(['--no-exit-on-drain'], { ...SECRET_ENV, EXIT_ON_DRAIN: 'yes' }).exitOnDrain).toBe(false);
    expect(load([], { ...SECRET_ENV, EXIT_ON_DRAIN: 'on' }).exitOnDrain).toBe(true);
  });

  it('requires the worker secret with a message that says where to put it', () => {
    expect(problems([])).toEqual([expect.stringContaining('WORKER_SECRET')]);
  });

  it('rejects a worker secret or backend key that an HTTP header cannot carry, naming the option but not the value', () => {
    const cyrillic = problems(['--worker-secret', 'секрет-ключ']);
    expect(cyrillic).toEqual([expect.stringMatching(/^--worker-secret contains characters that cannot be sent in an HTTP header/)]);
    expect(cyrillic[0]).not.toContain('секрет');

    expect(problems([], { WORKER_SECRET: 'abc\u0001def' })).toEqual([expect.stringContaining('WORKER_SECRET contains characters')]);
    expect(problems([], { WORKER_SECRET: 'line1\nline2' })).toEqual([expect.stringContaining('WORKER_SECRET contains characters')]);
    const file = writeTemp('secret.yaml', 'worker_secret: "пароль"\n');
    expect(problems(['--config', file])).toEqual([expect.stringContaining('worker_secret (config file) contains characters')]);

    const key = problems([], { ...SECRET_ENV, BACKEND_API_KEY: 'ключ-vllm' });
    expect(key).toEqual([expect.stringContaining('BACKEND_API_KEY contains characters that cannot be sent in an HTTP header')]);
    expect(key[0]).not.toContain('ключ');
    expect(problems(['--backend-api-key', 'k\u007fey'], SECRET_ENV)).toEqual([expect.stringContaining('--backend-api-key contains')]);
  });

  it('accepts secrets with any printable ASCII, inner spaces and Latin-1 letters, which HTTP headers can carry', () => {
    expect(load([], { WORKER_SECRET: 'a b!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~' }).workerSecret).toBe('a b!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~');
    expect(load([], { WORKER_SECRET: 'sécret', BACKEND_API_KEY: 'clé' })).toMatchObject({ workerSecret: 'sécret', backendApiKey: 'clé' });
  });

  it('names every bad value in one error', () => {
    const found = problems(
      [
        '--max-concurrency',
        '0',
        '--heartbeat-interval',
        'soon',
        '--proxy-url',
        'ftp://gw',
        '--log-level',
        'loud',
        '--capability',
        'llama3:vision,telepathy',
        '--frobnicate',
        'stray',
      ],
      { RECONNECT_MIN_SECS: '-1', EXIT_ON_DRAIN: 'maybe', MODELS: 'a,*' },
    );
    const text = found.join('\n');
    for (const needle of [
      '--max-concurrency must be an integer >= 1, got "0"',
      '--heartbeat-interval must be a number of seconds > 0, got "soon"',
      '--proxy-url must use http/https/ws/wss',
      '--log-level must be one of',
      'unknown capability "telepathy"',
      'unknown option --frobnicate',
      'unexpected argument "stray"',
      'RECONNECT_MIN_SECS must be a number of seconds > 0',
      'EXIT_ON_DRAIN must be true or false',
      'MODELS: * (ask the backend) cannot be combined',
      'a worker secret is required',
    ]) {
      expect(text).toContain(needle);
    }
    expect(found).toHaveLength(11);
  });

  it('rejects unknown keys in the config file and a reconnect min above the max', () => {
    const file = writeTemp('bad.yaml', 'worker_secret: x\nmax_concurency: 2\nreconnect_min_secs: 10\nreconnect_max_secs: 5\n');
    const found = problems(['--config', file]);
    expect(found).toEqual([expect.stringContaining('unknown key "max_concurency"'), expect.stringContaining('must not exceed reconnect max')]);
  });

  it('reads --priority from flag, env or file as an integer >= 0, and rejects anything else', () => {
    expect(load(['--priority', '0'], SECRET_ENV).priority).toBe(0);
    expect(load([], { ...SECRET_ENV, PRIORITY: '10' }).priority).toBe(10);
    const file = writeTemp('prio.yaml', 'priority: 7\n');
    expect(load(['--config', file], SECRET_ENV).priority).toBe(7);
    expect(load(['--config', file, '--priority=3'], SECRET_ENV).priority).toBe(3);
    expect(problems(['--priority', '-1'], SECRET_ENV)).toEqual([expect.stringContaining('--priority must be an integer >= 0, got "-1"')]);
    expect(problems([], { ...SECRET_ENV, PRIORITY: '1.5' })).toEqual([expect.stringContaining('PRIORITY must be an integer >= 0')]);
  });

  it('probes the backend by default; --no-probe, --probe=false, PROBE_BACKEND=false or probe: false turn it off', () => {
    expect(load([], SECRET_ENV).probe).toBe(true);
    expect(load(['--no-probe'], SECRET_ENV).probe).toBe(false);
    expect(load(['--probe=false'], SECRET_ENV).probe).toBe(false);
    expect(load([], { ...SECRET_ENV, PROBE_BACKEND: 'false' }).probe).toBe(false);
    expect(load(['--config', writeTemp('p.yaml', 'probe: false\n')], SECRET_ENV).probe).toBe(false);
    expect(load(['--probe'], { ...SECRET_ENV, PROBE_BACKEND: 'off' }).probe).toBe(true);
  });

  it('checks --ca-file when loading: a missing file or one without a PEM certificate is a configuration error', () => {
    const pem = writeTemp('ca.pem', '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n');
    expect(load(['--ca-file', pem], SECRET_ENV).caFile).toBe(pem);
    expect(load([], { ...SECRET_ENV, CA_FILE: pem, NODE_EXTRA_CA_CERTS: pem })).toMatchObject({ caFile: pem, extraCaCertsFile: pem });
    expect(problems(['--ca-file', '/nonexistent/ca.pem'], SECRET_ENV)).toEqual([expect.stringMatching(/^--ca-file "\/nonexistent\/ca.pem" cannot be read/)]);
    expect(problems(['--ca-file', writeTemp('not.pem', 'hello')], SECRET_ENV)).toEqual([expect.stringContaining('holds no PEM certificate')]);
    expect(problems(['--ca-file', pem], { ...SECRET_ENV, NODE_EXTRA_CA_CERTS: '/nonexistent/extra.pem' })).toEqual([
      expect.stringContaining('NODE_EXTRA_CA_CERTS "/nonexistent/extra.pem" cannot be read'),
    ]);
  });

  it('reads the lifecycle settings: --runner from a fixed list, --no-model-lifecycle, --lifecycle-timeout and an absolute --lora-dir', () => {
    expect(load(['--runner', 'ollama'], SECRET_ENV).runner).toBe('ollama');
    expect(load([], { ...SECRET_ENV, RUNNER_TYPE: 'Runner-API' }).runner).toBe('runner-api');
    expect(load(['--config', writeTemp('r.yaml', 'runner: vllm\nlora_dir: /srv/loras\nlifecycle_timeout_secs: 90\n')], SECRET_ENV)).toMatchObject({
      runner: 'vllm',
      loraDir: '/srv/loras',
      lifecycleTimeoutMs: 90_000,
    });
    expect(load(['--runner=llama-server'], { ...SECRET_ENV, RUNNER_TYPE: 'vllm' }).runner).toBe('llama-server');
    expect(load(['--no-model-lifecycle'], SECRET_ENV).modelLifecycle).toBe(false);
    expect(load([], { ...SECRET_ENV, MODEL_LIFECYCLE: 'false' }).modelLifecycle).toBe(false);
    expect(load(['--lifecycle-timeout', '600'], SECRET_ENV).lifecycleTimeoutMs).toBe(600_000);
    expect(problems(['--runner', 'tgi'], SECRET_ENV)).toEqual([
      '--runner must be one of auto, runner-api, llama-server, vllm, ollama, openai-compatible, got "tgi"',
    ]);
    expect(problems([], { ...SECRET_ENV, LORA_DIR: 'loras' })).toEqual([expect.stringContaining('LORA_DIR must be an absolute path')]);
    expect(problems(['--lifecycle-timeout', '0'], SECRET_ENV)).toEqual([expect.stringContaining('--lifecycle-timeout must be a number of seconds > 0')]);
  });

  it('refuses durations past what a Node timer holds (it would fire at once, or throw)', () => {
    expect(load(['--lifecycle-timeout', '2147483'], SECRET_ENV).lifecycleTimeoutMs).toBe(2_147_483_000);
    expect(problems(['--lifecycle-timeout', '5000000'], SECRET_ENV)).toEqual([expect.stringContaining('--lifecycle-timeout must be at most 2147483 seconds')]);
    expect(problems([], { ...SECRET_ENV, MODELS_POLL_INTERVAL_SECS: '3000000' })).toEqual([expect.stringContaining('must be at most 2147483 seconds')]);
  });

  it('reads --insecure-skip-verify as a boolean', () => {
    expect(load(['--insecure-skip-verify'], SECRET_ENV).insecureSkipVerify).toBe(true);
    expect(load([], { ...SECRET_ENV, INSECURE_SKIP_VERIFY: 'true' }).insecureSkipVerify).toBe(true);
    expect(load([], SECRET_ENV).insecureSkipVerify).toBe(false);
  });

  it('reads the proxy variables like curl (lowercase first, host:port means http://) and never echoes a bad value', () => {
    const c = load([], {
      ...SECRET_ENV,
      https_proxy: 'http://lower:3128',
      HTTPS_PROXY: 'http://upper:3128',
      HTTP_PROXY: 'proxy.corp:8080',
      NO_PROXY: 'localhost,127.0.0.1',
    });
    expect(c).toMatchObject({ httpsProxy: 'http://lower:3128/', httpProxy: 'http://proxy.corp:8080/', noProxy: 'localhost,127.0.0.1' });
    const none = load([], SECRET_ENV);
    expect([none.httpsProxy, none.httpProxy, none.noProxy]).toEqual([undefined, undefined, undefined]);
    const bad = problems([], { ...SECRET_ENV, HTTPS_PROXY: 'socks5://user:pw@sock:1080', http_proxy: 'http://[oops' });
    expect(bad).toEqual([
      expect.stringContaining('HTTPS_PROXY uses socks5://, but only http:// and https:// proxies are supported'),
      expect.stringContaining('http_proxy must be a proxy URL'),
    ]);
    expect(bad.join('\n')).not.toContain('pw');
    expect(problems([], { ...SECRET_ENV, HTTPS_PROXY: 'http://u:%zz@proxy:3128' })).toEqual([expect.stringContaining('malformed %-escape')]);
  });

  it('--help works without a secret and documents every flag and env variable', () => {
    expect(loadWorkerConfig(['--help'], {})).toEqual({ help: true, version: false });
    const help = helpText();
    for (const o of OPTIONS) {
      expect(help).toContain(`--${o.flag}`);
      expect(help).toContain(o.env);
    }
  });
});
