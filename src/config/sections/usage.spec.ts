import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '..';
import { readUsageConfig } from './usage';

describe('usage configuration', () => {
  it('defaults: 90 days of retention, a flush every 5 s, 500 rows per INSERT, 10 000 buffered', () => {
    expect(loadConfig({}).usage).toEqual({ retentionMs: 90 * 86_400_000, flushIntervalMs: 5000, batchSize: 500, bufferSize: 10_000 });
  });

  it('reads the environment', () => {
    const problems: string[] = [];
    const c = readUsageConfig(
      { USAGE_RETENTION_DAYS: '30', USAGE_FLUSH_INTERVAL_SECS: '0.5', USAGE_BATCH_SIZE: '100', USAGE_BUFFER_SIZE: '2000' },
      undefined,
      problems,
    );
    expect(problems).toEqual([]);
    expect(c).toEqual({ retentionMs: 30 * 86_400_000, flushIntervalMs: 500, batchSize: 100, bufferSize: 2000 });
    expect(readUsageConfig({ USAGE_RETENTION_DAYS: '0' }, undefined, problems).retentionMs).toBe(0);
  });

  it('reads the usage: section of the file, the environment winning', () => {
    const dir = mkdtempSync(join(tmpdir(), 'usage-config-'));
    try {
      const path = join(dir, 'sb.yaml');
      writeFileSync(path, 'usage:\n  retention_days: 7\n  batch_size: 50\n  buffer_size: 400\n  flush_interval_secs: 2\n');
      expect(loadConfig({ CONFIG_FILE: path, USAGE_BATCH_SIZE: '60' }).usage).toEqual({
        retentionMs: 7 * 86_400_000,
        flushIntervalMs: 2000,
        batchSize: 60,
        bufferSize: 400,
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('names every bad value', () => {
    const problems: string[] = [];
    readUsageConfig({ USAGE_RETENTION_DAYS: '-1', USAGE_BATCH_SIZE: '5000', USAGE_FLUSH_INTERVAL_SECS: '0' }, { retention_dayz: 3 }, problems);
    expect(problems).toEqual([
      'usage.retention_dayz (config file) is not a usage setting (known: retention_days, flush_interval_secs, batch_size, buffer_size)',
      'USAGE_RETENTION_DAYS must be a number >= 0, got "-1"',
      'USAGE_BATCH_SIZE must be an integer >= 1 <= 1000, got "5000"',
      'USAGE_FLUSH_INTERVAL_SECS must be a number > 0 <= 2147483, got "0"',
    ]);
    expect(() => loadConfig({ USAGE_BUFFER_SIZE: '10', USAGE_BATCH_SIZE: '20' })).toThrow(ConfigError);
    expect(() => loadConfig({ USAGE_BUFFER_SIZE: '10', USAGE_BATCH_SIZE: '20' })).toThrow(/USAGE_BUFFER_SIZE \(10\) must be at least USAGE_BATCH_SIZE \(20\)/);
  });

  it('rejects a usage section that is not a mapping', () => {
    const problems: string[] = [];
    readUsageConfig({}, ['a'], problems);
    expect(problems).toEqual(['usage (config file) must be a mapping']);
  });
});
