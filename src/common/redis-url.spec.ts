import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../config';
import { maskRedisUrl, redisHostPort, validateRedisUrl } from './redis-url';

const base = { DATABASE_URL: 'sqlite::memory:' };

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig({ ...base, ...env });
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  return [];
}

describe('REDIS_URL', () => {
  it('is unset by default (in-memory rate limits)', () => {
    expect(loadConfig(base).redisUrl).toBeUndefined();
    expect(loadConfig({ ...base, REDIS_URL: '' }).redisUrl).toBeUndefined();
  });

  it.each(['redis://127.0.0.1:6379', 'redis://cache', 'rediss://:p%40ss@redis.internal:6380/2', 'redis://user:pw@[::1]:6379/0'])('accepts %s', (url) => {
    expect(loadConfig({ ...base, REDIS_URL: url }).redisUrl).toBe(url);
  });

  it('is read from the YAML key redis_url too', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-redis-'));
    try {
      const file = join(dir, 'c.yaml');
      writeFileSync(file, 'redis_url: redis://from-yaml:6379\n');
      expect(loadConfig({ ...base, CONFIG_FILE: file }).redisUrl).toBe('redis://from-yaml:6379');
      expect(loadConfig({ ...base, CONFIG_FILE: file, REDIS_URL: 'redis://from-env' }).redisUrl).toBe('redis://from-env');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.each([
    ['http://cache:6379', /redis:\/\/ or rediss:\/\//],
    ['cache:6379', /redis:\/\/ or rediss:\/\//],
    ['not a url', /redis:\/\/ or rediss:\/\//],
    ['redis://', /needs a host/],
    ['redis://cache:99999', /redis:\/\/ or rediss:\/\//],
    ['redis://cache:6379/abc', /database number/],
  ])('rejects %s', (url, message) => {
    const problems = problemsOf({ REDIS_URL: url });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(message);
  });

  it('never shows the password in a config error', () => {
    const problems = problemsOf({ REDIS_URL: 'http://user:hunter2@cache:6379' });
    expect(problems[0]).toContain('***@cache');
    expect(problems.join(' ')).not.toContain('hunter2');
  });

  it('shows host:port only (default port 6379, IPv6 in brackets)', () => {
    expect(redisHostPort('redis://:secret@cache.internal/3')).toBe('cache.internal:6379');
    expect(redisHostPort('rediss://u:p@10.0.0.5:6380')).toBe('10.0.0.5:6380');
    expect(redisHostPort('redis://[::1]:7000')).toBe('[::1]:7000');
    expect(maskRedisUrl('redis://u:p@h:1')).toBe('redis://***@h:1');
    expect(() => validateRedisUrl('redis://h:1')).not.toThrow();
  });
});
