import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../load-config';

const HASH = 'a'.repeat(64);

function withFile(yaml: string): Record<string, string> {
  const path = join(mkdtempSync(join(tmpdir(), 'sb-keys-')), 'c.yaml');
  writeFileSync(path, yaml);
  return { CONFIG_FILE: path };
}

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  return [];
}

describe('API keys configuration', () => {
  it('does not require keys by default', () => {
    const c = loadConfig({});
    expect(c.apiKeys).toEqual({
      requireApiKeys: false,
      keys: [],
      lastUsedFlushIntervalMs: 10_000,
      authLimiter: { maxFailures: 20, windowMs: 60_000, blockMs: 60_000 },
    });
  });

  it('reads REQUIRE_API_KEYS, its MODELRELAY_ alias and require_api_keys in the file', () => {
    expect(loadConfig({ REQUIRE_API_KEYS: 'true' }).apiKeys.requireApiKeys).toBe(true);
    expect(loadConfig({ MODELRELAY_REQUIRE_API_KEYS: '1' }).apiKeys.requireApiKeys).toBe(true);
    expect(loadConfig({ REQUIRE_API_KEYS: 'false', MODELRELAY_REQUIRE_API_KEYS: 'true' }).apiKeys.requireApiKeys).toBe(false);
    expect(loadConfig(withFile('require_api_keys: true\n')).apiKeys.requireApiKeys).toBe(true);
    expect(loadConfig({ ...withFile('require_api_keys: true\n'), REQUIRE_API_KEYS: 'off' }).apiKeys.requireApiKeys).toBe(false);
    expect(problemsOf({ MODELRELAY_REQUIRE_API_KEYS: 'maybe' })).toEqual(['MODELRELAY_REQUIRE_API_KEYS must be true or false, got "maybe"']);
  });

  it('reads the limiter and flush settings', () => {
    const c = loadConfig({
      CLIENT_AUTH_FAILURE_LIMIT: '3',
      CLIENT_AUTH_FAILURE_WINDOW_SECS: '0.5',
      CLIENT_AUTH_BLOCK_SECS: '2',
      API_KEY_LAST_USED_FLUSH_SECS: '0.05',
    });
    expect(c.apiKeys.authLimiter).toEqual({ maxFailures: 3, windowMs: 500, blockMs: 2000 });
    expect(c.apiKeys.lastUsedFlushIntervalMs).toBe(50);
    expect(problemsOf({ CLIENT_AUTH_FAILURE_LIMIT: '0', API_KEY_LAST_USED_FLUSH_SECS: '0' })).toHaveLength(2);
  });

  it('reads keys: from the config file, hashes lower-cased', () => {
    const c = loadConfig(
      withFile(
        [
          'keys:',
          '  - name: ci-bot',
          '    tenant: team-a',
          `    key_sha256: "${'AB'.repeat(32)}"`,
          '    rpm: 60',
          '    tpm: 100000',
          '    priority: LOW',
          '    models: [llama-3-8b, " qwen "]',
          '    expires_at: 2031-01-01T00:00:00Z',
          '  - name: plain',
          '    tenant: default',
          `    key_sha256: ${HASH}`,
          '    enabled: false',
        ].join('\n'),
      ),
    );
    expect(c.apiKeys.keys).toEqual([
      {
        name: 'ci-bot',
        tenant: 'team-a',
        keySha256: 'ab'.repeat(32),
        enabled: true,
        rpm: 60,
        tpm: 100000,
        priority: 'low',
        models: ['llama-3-8b', 'qwen'],
        expiresAt: Date.UTC(2031, 0, 1),
      },
      { name: 'plain', tenant: 'default', keySha256: HASH, enabled: false },
    ]);
  });

  it('names every problem of the keys: section at boot', () => {
    const problems = problemsOf(
      withFile(
        [
          'keys:',
          '  - name: "has space"',
          '    tenant: "bad tenant!"',
          '    key_sha256: sb-not-a-hash',
          '    rpm: -1',
          '    tpm: 1.5',
          '    priority: urgent',
          '    models: []',
          '    expires_at: tomorrow',
          '    colour: red',
          '  - tenant: t',
          `  - {name: dup, tenant: t, key_sha256: ${HASH}}`,
          `  - {name: dup, tenant: t, key_sha256: ${HASH}}`,
        ].join('\n'),
      ),
    );
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^keys\[0\]\.name must be 1-60 characters/),
        expect.stringMatching(/^keys\[0\]\.tenant must be a tenant id/),
        expect.stringMatching(/^keys\[0\]\.key_sha256 must be the key's SHA-256 as 64 hex digits/),
        'keys[0].rpm must be an integer >= 0, got -1',
        'keys[0].tpm must be an integer >= 0, got 1.5',
        'keys[0].priority must be one of high, normal, low',
        expect.stringMatching(/^keys\[0\]\.models must be a list of 1-1000 model names/),
        expect.stringMatching(/^keys\[0\]\.expires_at must be an ISO 8601 date/),
        expect.stringMatching(/^keys\[0\]\.colour is not a key setting/),
        'keys[1].name is required',
        'keys[1].key_sha256 is required',
        'keys: "dup" is declared twice',
        'keys: "dup" has the same key_sha256 as another key',
      ]),
    );
    expect(problems).toHaveLength(13);
    expect(problemsOf(withFile('keys: {a: 1}\n'))).toEqual(['keys (config file) must be a list of {name, tenant, key_sha256, ...}']);
  });

  it('reads max_concurrent of keys and tenants (an integer >= 1)', () => {
    const c = loadConfig(
      withFile(`keys:
  - {name: batch, tenant: team-a, key_sha256: ${HASH}, max_concurrent: 4}
tenants:
  team-a: {max_concurrent: 16, max_queued: 100}
`),
    );
    expect(c.apiKeys.keys[0]).toMatchObject({ name: 'batch', maxConcurrent: 4 });
    expect(c.tenancy.tenants.get('team-a')).toEqual({ maxConcurrent: 16, maxQueued: 100 });
    expect(problemsOf(withFile(`keys:\n  - {name: z, tenant: t, key_sha256: ${HASH}, max_concurrent: 0}\ntenants:\n  t: {max_concurrent: 0}\n`))).toEqual([
      expect.stringContaining('tenants.t.max_concurrent must be an integer >= 1'),
      'keys[0].max_concurrent must be an integer >= 1, got 0',
    ]);
  });
});
