import fc from 'fast-check';
import { parseCapabilityDeclarations, readRoutingConfig } from './routing';

function read(section: unknown, env: Record<string, string> = {}) {
  const problems: string[] = [];
  const config = readRoutingConfig(env, section, problems);
  return { config, problems };
}

describe('routing configuration', () => {
  it('defaults: smart, 50/30/20, pinning allowed, eject after 3 failures for 30 s up to 5 min', () => {
    const { config, problems } = read(undefined);
    expect(problems).toEqual([]);
    expect(config).toMatchObject({
      strategy: 'smart',
      weights: { priority: 50, load: 30, latency: 20 },
      allowPinning: true,
      ejection: { ejectAfterFailures: 3, cooldownMs: 30_000, maxCooldownMs: 300_000 },
    });
    expect(config.maxRetries).toBeUndefined();
  });

  it('reads every setting from the file, and ROUTING_* variables win', () => {
    const { config, problems } = read(
      {
        strategy: 'round_robin',
        max_retries: 2,
        allow_pinning: false,
        eject_after_failures: 5,
        eject_cooldown_secs: 1.5,
        weights: { priority: 20, load: 40, latency: 40 },
        aliases: { 'gpt-4': 'llama3:70b' },
        fallbacks: { 'llama3:70b': ['llama3:8b', 'mistral:7b'] },
      },
      { ROUTING_STRATEGY: 'priority_only', ROUTING_ALIASES: 'gpt-3.5-turbo=llama3:8b', ROUTING_FALLBACKS: 'llama3:8b=mistral:7b' },
    );
    expect(problems).toEqual([]);
    expect(config.strategy).toBe('priority_only');
    expect(config.maxRetries).toBe(2);
    expect(config.allowPinning).toBe(false);
    expect(config.ejection).toEqual({ ejectAfterFailures: 5, cooldownMs: 1500, maxCooldownMs: 300_000 });
    expect(config.weights).toEqual({ priority: 20, load: 40, latency: 40 });
    expect([...config.aliases]).toEqual([
      ['gpt-4', 'llama3:70b'],
      ['gpt-3.5-turbo', 'llama3:8b'],
    ]);
    expect([...config.fallbacks]).toEqual([
      ['llama3:70b', ['llama3:8b', 'mistral:7b']],
      ['llama3:8b', ['mistral:7b']],
    ]);
  });

  it('an unknown strategy falls back to smart with a warning, not an error', () => {
    const { config, problems } = read({ strategy: 'fastest' });
    expect(problems).toEqual([]);
    expect(config.strategy).toBe('smart');
    expect(config.warnings[0]).toContain('unknown routing strategy "fastest"');
  });

  it('names every problem at once: unknown keys, weights, alias chains and cycles, self-fallbacks', () => {
    const { problems } = read({
      stratgy: 'smart',
      weights: { priority: 50, load: 30, latency: 30, speed: 1 },
      aliases: { a: 'b', b: 'a', c: 'c', d: 'e', e: 'x', gpt: 'llama' },
      fallbacks: { m: ['n', 'm'], k: ['j', 'j'], gpt: ['llama'] },
      eject_after_failures: 0,
    });
    const text = problems.join('\n');
    expect(text).toContain('routing.stratgy (config file) is not a routing setting');
    expect(text).toContain('routing.weights.speed is not a weight');
    expect(text).toContain('routing.weights must sum to 100');
    expect(text).toContain('"a" → "b" points at another alias');
    expect(text).toContain('"b" → "a" points at another alias');
    expect(text).toContain('"c" points at itself');
    expect(text).toContain('"d" → "e" points at another alias');
    expect(text).toContain('"m" falls back to itself');
    expect(text).toContain('"k" lists a fallback twice');
    expect(text).toContain('"gpt" falls back to itself (through "llama")');
    expect(text).toContain('eject_after_failures');
  });

  it('rejects malformed sections instead of crashing', () => {
    expect(read('smart').problems).toEqual(['routing (config file) must be a mapping']);
    expect(read({ aliases: ['a'] }).problems[0]).toContain('routing.aliases must be a mapping');
    expect(read({ fallbacks: { m: 'n' } }).problems[0]).toContain('routing.fallbacks.m: must map a model name to a list');
    expect(read({ weights: { priority: 'high' } }).problems[0]).toContain('routing.weights.priority must be an integer');
  });

  it('accepted aliases always resolve in one step to a model that is not an alias', () => {
    const name = fc.constantFrom('a', 'b', 'c', 'd', 'e', 'gpt-4', 'llama');
    fc.assert(
      fc.property(fc.dictionary(name, name), (aliases) => {
        const { config, problems } = read({ aliases });
        if (problems.length > 0) return; // rejected at boot: never used
        for (const target of config.aliases.values()) expect(config.aliases.has(target)).toBe(false);
      }),
    );
  });
});

describe('provider capability declarations', () => {
  it('reads booleans and a positive context length per model', () => {
    const problems: string[] = [];
    expect(parseCapabilityDeclarations({ llava: { vision: true, context_length: 4096 }, '*': { tools: false } }, 'caps', problems)).toEqual({
      llava: { vision: true, context_length: 4096 },
      '*': { tools: false },
    });
    expect(problems).toEqual([]);
  });

  it('names each bad entry', () => {
    const problems: string[] = [];
    parseCapabilityDeclarations({ m: { vision: 'yes', context_length: -1, telepathy: true }, n: 3 }, 'providers[0].capabilities', problems);
    expect(problems).toEqual([
      'providers[0].capabilities.m.vision must be true or false',
      'providers[0].capabilities.m.context_length must be a positive integer',
      'providers[0].capabilities.m.telepathy is not a capability (known: vision, tools, json_mode, context_length)',
      'providers[0].capabilities.n must be a mapping of vision, tools, json_mode, context_length',
    ]);
  });

  it('refuses "__proto__" as a model name (it would set the mapping’s prototype, not a model)', () => {
    const problems: string[] = [];
    const out = parseCapabilityDeclarations(JSON.parse('{"__proto__": {"vision": true}, "m": {"tools": true}}'), 'caps', problems);
    expect(problems).toEqual(['caps.__proto__: "__proto__" cannot name a model']);
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect((out as Record<string, unknown>).vision).toBeUndefined();
    expect(out).toEqual({ m: { tools: true } });
  });

  it('watchdogs: first byte 120 s and stream idle 60 s by default; the file, ROUTING_* and per-pool first-byte overrides', () => {
    expect(read(undefined).config).toMatchObject({ firstByteTimeoutMs: 120_000, streamIdleTimeoutMs: 60_000, firstByteTimeoutMsByPool: new Map() });
    const { config, problems } = read(
      { first_byte_timeout_secs: 30, stream_idle_timeout_secs: 10, first_byte_timeout_secs_per_pool: { 'gpu-slow': 300 } },
      { ROUTING_STREAM_IDLE_TIMEOUT_SECS: '5' },
    );
    expect(problems).toEqual([]);
    expect(config).toMatchObject({ firstByteTimeoutMs: 30_000, streamIdleTimeoutMs: 5_000, firstByteTimeoutMsByPool: new Map([['gpu-slow', 300_000]]) });
    const bad = read({ first_byte_timeout_secs: 0, first_byte_timeout_secs_per_pool: { p: 'soon' } }).problems;
    expect(bad).toHaveLength(2);
    expect(bad).toEqual(
      expect.arrayContaining([
        expect.stringContaining('routing.first_byte_timeout_secs (config file)'),
        expect.stringContaining('routing.first_byte_timeout_secs_per_pool.p'),
      ]),
    );
  });
});

describe('routing.affinity and routing.expose_worker_header', () => {
  it('defaults: on for smart, off for the other strategies; every source; 2048 characters; load factor 1.25; no worker header', () => {
    const { config, problems } = read(undefined);
    expect(problems).toEqual([]);
    expect(config.affinity).toEqual({
      enabled: true,
      sources: ['header', 'session_header', 'prompt_cache_key', 'metadata.user_id', 'user', 'prefix'],
      prefixChars: 2048,
      minPrefixChars: 512,
      loadFactor: 1.25,
    });
    expect(config.exposeWorkerHeader).toBe(false);
    expect(read({ strategy: 'round_robin' }).config.affinity.enabled).toBe(false);
    expect(read({ strategy: 'round_robin', affinity: { enabled: true } }).config.affinity.enabled).toBe(true);
  });

  it('reads the file and ROUTING_AFFINITY_* / ROUTING_EXPOSE_WORKER_HEADER, the variables winning', () => {
    const { config, problems } = read(
      { expose_worker_header: true, affinity: { enabled: false, sources: ['user', 'prefix'], prefix_chars: 512, min_prefix_chars: 100, load_factor: 2 } },
      { ROUTING_AFFINITY_LOAD_FACTOR: '1.5', ROUTING_AFFINITY_SOURCES: 'header,prompt_cache_key', ROUTING_AFFINITY_MIN_PREFIX_CHARS: '0' },
    );
    expect(problems).toEqual([]);
    expect(config.affinity).toEqual({ enabled: false, sources: ['header', 'prompt_cache_key'], prefixChars: 512, minPrefixChars: 0, loadFactor: 1.5 });
    expect(config.exposeWorkerHeader).toBe(true);
  });

  it('reports unknown sources and keys, a load factor under 1 and a non-mapping', () => {
    expect(read({ affinity: { sources: ['cookie'] } }).problems.join('\n')).toMatch(/"cookie" is not a source/);
    expect(read({ affinity: { sticky: true } }).problems.join('\n')).toMatch(/routing\.affinity\.sticky .* is not an affinity setting/);
    expect(read({ affinity: { load_factor: 0.5 } }).problems.length).toBeGreaterThan(0);
    expect(read({ affinity: 'on' }).problems).toContain('routing.affinity (config file) must be a mapping');
  });
});
