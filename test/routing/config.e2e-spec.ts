import { ConfigError, loadConfig } from '../../src/config';
import { startGateway } from '../support/gateway';
import { writeConfig } from '../support/routing';

const BASE_ENV = { DATABASE_URL: 'sqlite::memory:', WORKER_SECRET: 'test-worker-secret' };

function problemsOf(env: Record<string, string>): { error: unknown; problems: string[] } {
  try {
    loadConfig({ ...BASE_ENV, ...env });
  } catch (error) {
    return { error, problems: error instanceof ConfigError ? error.problems : [] };
  }
  return { error: undefined, problems: [] };
}

describe('routing configuration', () => {
  it('an invalid routing section fails with a ConfigError naming every problem at once', () => {
    const configFile = writeConfig(`
providers:
  - name: local
    secret: test-worker-secret
    priority: -1
    capabilities:
      m: { vision: 'yes', context_length: 0, colour: true }
routing:
  weights: { priority: 50, load: 30, latency: 30 }
  aliases:
    a: b
    b: c
    self: self
    gpt-4: llama3
  fallbacks:
    m: [m]
    gpt-4: [llama3]
    n: [x, x]
    bad: notalist
  allow_pinning: maybe
  max_retries: -1
  eject_after_failures: 0
  eject_cooldown_secs: 10
  eject_max_cooldown_secs: 5
  bogus: 1
`);
    const { error, problems } = problemsOf({ CONFIG_FILE: configFile });
    expect(error).toBeInstanceOf(ConfigError);
    const expected: Array<[string, RegExp]> = [
      ['weights that do not sum to 100', /routing\.weights.*sum to 100/],
      ['an alias to another alias', /routing\.aliases.*"a".*another alias/],
      ['an alias to itself', /routing\.aliases.*"self".*itself/],
      ['a model falling back to itself', /routing\.fallbacks.*"m".*itself/],
      ['a model falling back to itself through its alias', /routing\.fallbacks.*"gpt-4".*itself/],
      ['a fallback listed twice', /routing\.fallbacks.*"n".*twice/],
      ['a fallback chain that is not a list', /routing\.fallbacks\.bad/],
      ['a non-boolean allow_pinning', /^routing\.allow_pinning .*true or false/],
      ['a negative max_retries', /^routing\.max_retries .*>= 0/],
      ['eject_after_failures below 1', /^routing\.eject_after_failures .*>= 1/],
      ['a max cooldown below the cooldown', /^routing\.eject_max_cooldown_secs must be at least routing\.eject_cooldown_secs/],
      ['an unknown routing key', /routing\.bogus/],
      ['a negative provider priority', /providers\[0\]\.priority/],
      ['a non-boolean capability', /providers\[0\]\.capabilities\.m\.vision/],
      ['a non-positive context_length', /providers\[0\]\.capabilities\.m\.context_length/],
      ['an unknown capability', /providers\[0\]\.capabilities\.m\.colour/],
    ];
    const unmatched = expected.filter(([, re]) => !problems.some((p) => re.test(p))).map(([what]) => what);
    expect({ unmatched, problems }).toEqual({ unmatched: [], problems });
    // The message itself names every problem.
    for (const p of problems) expect((error as Error).message).toContain(p);
  });

  it('invalid weights are each named (non-integer, out of range, unknown)', () => {
    const { error, problems } = problemsOf({
      CONFIG_FILE: writeConfig(`
routing:
  weights: { priority: 50.5, load: 130, speed: 10 }
`),
    });
    expect(error).toBeInstanceOf(ConfigError);
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/routing\.weights\.priority/),
        expect.stringMatching(/routing\.weights\.load/),
        expect.stringMatching(/routing\.weights\.speed/),
      ]),
    );
  });

  it('invalid ROUTING_* environment variables are named too', () => {
    const { error, problems } = problemsOf({
      ROUTING_ALIASES: 'gpt-4=,=llama3',
      ROUTING_FALLBACKS: 'm=m',
      ROUTING_EJECT_AFTER_FAILURES: 'three',
      ROUTING_EJECT_COOLDOWN_SECS: '0',
    });
    expect(error).toBeInstanceOf(ConfigError);
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/ROUTING_ALIASES.*gpt-4=/),
        expect.stringMatching(/ROUTING_ALIASES.*=llama3/),
        expect.stringMatching(/routing\.fallbacks.*"m".*itself/),
        expect.stringMatching(/ROUTING_EJECT_AFTER_FAILURES/),
        expect.stringMatching(/ROUTING_EJECT_COOLDOWN_SECS/),
      ]),
    );
  });

  it('the gateway does not boot with an invalid routing section', async () => {
    const configFile = writeConfig(`
routing:
  aliases: { x: y, y: x }
`);
    await expect(startGateway({ CONFIG_FILE: configFile })).rejects.toThrow(ConfigError);
  });

  it('a valid routing section is read, and ROUTING_* variables override it', () => {
    const configFile = writeConfig(`
routing:
  strategy: priority_only
  weights: { priority: 20, load: 60, latency: 20 }
  aliases: { gpt-4: llama3:70b }
  fallbacks: { llama3:70b: [llama3:8b, mistral:7b] }
  allow_pinning: false
  max_retries: 5
  eject_after_failures: 4
  eject_cooldown_secs: 2
  eject_max_cooldown_secs: 20
`);
    const config = loadConfig({ ...BASE_ENV, CONFIG_FILE: configFile, ROUTING_STRATEGY: 'random', ROUTING_ALIASES: 'gpt-3.5-turbo=llama3:8b' });
    expect(config.routing.strategy).toBe('random');
    expect(config.routing.weights).toEqual({ priority: 20, load: 60, latency: 20 });
    expect([...config.routing.aliases]).toEqual([
      ['gpt-4', 'llama3:70b'],
      ['gpt-3.5-turbo', 'llama3:8b'],
    ]);
    expect(config.routing.fallbacks.get('llama3:70b')).toEqual(['llama3:8b', 'mistral:7b']);
    expect(config.routing.allowPinning).toBe(false);
    expect(config.maxRequeues).toBe(5);
    expect(config.routing.ejection).toEqual({ ejectAfterFailures: 4, cooldownMs: 2000, maxCooldownMs: 20000 });
  });

  it('defaults: smart 50/30/20, pinning allowed, ejection after 3 failures for 30 s up to 300 s', () => {
    const config = loadConfig({ ...BASE_ENV });
    expect(config.routing.strategy).toBe('smart');
    expect(config.routing.weights).toEqual({ priority: 50, load: 30, latency: 20 });
    expect(config.routing.allowPinning).toBe(true);
    expect(config.routing.ejection).toEqual({ ejectAfterFailures: 3, cooldownMs: 30000, maxCooldownMs: 300000 });
  });

  it('an unknown strategy falls back to smart with a warning (spec edge case), not a boot failure', () => {
    const config = loadConfig({ ...BASE_ENV, ROUTING_STRATEGY: 'fastest' });
    expect(config.routing.strategy).toBe('smart');
    expect(config.routing.warnings.join(' ')).toContain('fastest');
  });
});
