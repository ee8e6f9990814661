import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from './load-config';

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  return [];
}

describe('loadConfig', () => {
  it('uses the documented defaults', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      listenHost: '127.0.0.1',
      listenPort: 8080,
      defaultProviderName: 'local',
      heartbeatIntervalMs: 15000,
      heartbeatTimeoutMs: 45000,
      databaseUrl: 'sqlite:./data/switchboard.db',
      logLevel: 'info',
      adminToken: undefined,
    });
    expect(c.providers).toEqual([
      expect.objectContaining({ name: 'local', secret: undefined, maxQueueLen: 100, queueTimeoutMs: 30000, requestTimeoutMs: 300000 }),
    ]);
  });

  it('accepts fractional durations', () => {
    const c = loadConfig({ QUEUE_TIMEOUT_SECS: '0.2', HEARTBEAT_INTERVAL_SECS: '0.05', HEARTBEAT_TIMEOUT_SECS: '0.15' });
    expect(c.providers[0].queueTimeoutMs).toBe(200);
    expect(c.heartbeatIntervalMs).toBe(50);
  });

  it('names every bad key at once', () => {
    const problems = problemsOf({ MAX_QUEUE_LEN: '-3', LISTEN_ADDR: 'nope', LOG_LEVEL: 'loud', QUEUE_TIMEOUT_SECS: 'soon' });
    expect(problems).toHaveLength(4);
    expect(problems.join('\n')).toMatch(/MAX_QUEUE_LEN/);
    expect(problems.join('\n')).toMatch(/LISTEN_ADDR/);
    expect(problems.join('\n')).toMatch(/LOG_LEVEL/);
    expect(problems.join('\n')).toMatch(/QUEUE_TIMEOUT_SECS/);
  });

  it('takes the admin token from MODELRELAY_ADMIN_TOKEN too', () => {
    expect(loadConfig({ MODELRELAY_ADMIN_TOKEN: 't' }).adminToken).toBe('t');
  });

  it('reads providers from the YAML file and lets the environment override it', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'sb-')), 'c.yaml');
    writeFileSync(
      path,
      'max_queue_len: 7\nproviders:\n  - name: local\n    secret: from-file\n  - name: gpu\n    secret: s2\n    max_queue_len: 3\n    models: [llama]\n',
    );
    const c = loadConfig({ CONFIG_FILE: path, WORKER_SECRET: 'from-env', MAX_QUEUE_LEN: '9' });
    expect(c.providers.map((p) => p.name)).toEqual(['local', 'gpu']);
    expect(c.providers[0].secret).toBe('from-env');
    expect(c.providers[0].maxQueueLen).toBe(9);
    expect(c.providers[1]).toMatchObject({ maxQueueLen: 3, models: ['llama'] });
  });

  it('reports bad provider entries in the file', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'sb-')), 'c.yaml');
    writeFileSync(path, 'providers:\n  - name: "bad name!"\n    max_queue_len: -1\n  - name: ok\n  - name: ok\n');
    const problems = problemsOf({ CONFIG_FILE: path });
    expect(problems.join('\n')).toMatch(/providers\[0\]\.name/);
    expect(problems.join('\n')).toMatch(/providers\[0\]\.max_queue_len/);
    expect(problems.join('\n')).toMatch(/declared twice/);
  });

  it("reads a pool's own first_byte_timeout_secs; unset it follows routing.first_byte_timeout_secs; bad values are named", () => {
    const path = join(mkdtempSync(join(tmpdir(), 'sb-')), 'c.yaml');
    writeFileSync(path, 'routing:\n  first_byte_timeout_secs: 30\nproviders:\n  - name: slow\n    first_byte_timeout_secs: 300.5\n  - name: fast\n');
    const c = loadConfig({ CONFIG_FILE: path });
    expect(c.providers[0].firstByteTimeoutMs).toBe(300_500);
    expect(c.providers[1].firstByteTimeoutMs).toBeUndefined();
    expect(c.routing.firstByteTimeoutMs).toBe(30_000);
    writeFileSync(
      path,
      'providers:\n  - name: a\n    first_byte_timeout_secs: 0\n  - name: b\n    first_byte_timeout_secs: soon\n  - name: c\n    first_byte_timeout_secs: 3000000\n',
    );
    const problems = problemsOf({ CONFIG_FILE: path }).join('\n');
    expect(problems).toMatch(/providers\[0\]\.first_byte_timeout_secs/);
    expect(problems).toMatch(/providers\[1\]\.first_byte_timeout_secs/);
    expect(problems).toMatch(/providers\[2\]\.first_byte_timeout_secs/);
  });

  it('rejects an unreadable config file and an unknown database scheme', () => {
    const problems = problemsOf({ CONFIG_FILE: '/nonexistent/switchboard.yaml', DATABASE_URL: 'mysql://x' });
    expect(problems.join('\n')).toMatch(/CONFIG_FILE/);
    expect(problems.join('\n')).toMatch(/DATABASE_URL/);
  });

  it('rejects durations that would overflow Node timers or round to zero', () => {
    const problems = problemsOf({ REQUEST_TIMEOUT_SECS: '3000000', QUEUE_TIMEOUT_SECS: '0.0001', STALE_SWEEP_INTERVAL_SECS: '9999999' });
    expect(problems.join('\n')).toMatch(/REQUEST_TIMEOUT_SECS must be a number > 0 <= 2147483/);
    expect(problems.join('\n')).toMatch(/QUEUE_TIMEOUT_SECS must be at least 0.001/);
    expect(problems.join('\n')).toMatch(/STALE_SWEEP_INTERVAL_SECS/);
  });

  it('validates DATABASE_URL, the LISTEN_ADDR host and INSTANCE_ID at boot', () => {
    const problems = problemsOf({ DATABASE_URL: 'sqlite:', LISTEN_ADDR: '256.1.1.1:80', INSTANCE_ID: 'x'.repeat(200) });
    expect(problems.join('\n')).toMatch(/sqlite: needs a file path/);
    expect(problems.join('\n')).toMatch(/LISTEN_ADDR host "256.1.1.1"/);
    expect(problems.join('\n')).toMatch(/INSTANCE_ID/);
    expect(problemsOf({ DATABASE_URL: 'postgres://u@h/db?schema=Bad' }).join()).toMatch(/schema/);
    expect(problemsOf({ LISTEN_ADDR: 'gateway.internal:8080', DATABASE_URL: 'postgres://u@h:5432/db?schema=sb' })).toEqual([]);
  });

  it('rejects malformed secret hashes, non-string secrets and unknown keys in the file', async () => {
    const { hashSecret } = await import('../common/secret-hash');
    const good = await hashSecret('s3cret-value');
    const path = join(mkdtempSync(join(tmpdir(), 'sb-')), 'c.yaml');
    writeFileSync(
      path,
      [
        'log_levle: debug',
        'providers:',
        `  - name: ok`,
        `    secret_hash: "${good}"`,
        '  - name: odd-n',
        `    secret_hash: "${good.replace('scrypt$16384$', 'scrypt$1000$')}"`,
        '  - name: junk',
        '    secret_hash: "scrypt$oops"',
        '  - name: numeric',
        '    secret: 12345678',
        '    max_queue_length: 3',
      ].join('\n'),
    );
    const problems = problemsOf({ CONFIG_FILE: path });
    expect(problems).toEqual(
      expect.arrayContaining([
        'log_levle (config file) is not a setting',
        expect.stringMatching(/providers\[1\]\.secret_hash/),
        expect.stringMatching(/providers\[2\]\.secret_hash/),
        expect.stringMatching(/providers\[3\]\.secret must be a string/),
        'providers[3].max_queue_length is not a provider setting',
      ]),
    );
    expect(problems.join('\n')).not.toMatch(/providers\[0\]/);
  });

  it('keeps the provider defaults for providers created later', () => {
    const c = loadConfig({ MAX_QUEUE_LEN: '7', QUEUE_TIMEOUT_SECS: '5' });
    expect(c.providerDefaults).toEqual({ maxQueueLen: 7, queueTimeoutMs: 5000, requestTimeoutMs: 300000, maxModelsPerWorker: 256 });
  });
});
