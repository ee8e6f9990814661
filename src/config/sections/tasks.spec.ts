import { loadConfig } from '..';
import { ConfigError } from '../load-config';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

function file(yaml: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'sb-tasks-')), 'config.yaml');
  writeFileSync(path, yaml);
  return path;
}

describe('tasks: configuration', () => {
  it('has defaults, reads the tasks: section, and environment variables win', () => {
    expect(loadConfig({}).tasks).toEqual({
      maxEvents: 50_000,
      maxBytes: 2 * 1024 * 1024,
      retentionMs: 3_600_000,
      maxRetainedBytes: 256 * 1024 * 1024,
      maxReaders: 16,
      keepaliveMs: 15_000,
      positionIntervalMs: 1000,
      metricsIntervalMs: 5000,
      sessionTtlMs: 86_400_000,
      queueTimeoutMs: 3_600_000,
      maxRunMs: 3_600_000,
    });
    const config = loadConfig({
      CONFIG_FILE: file(
        'tasks:\n  max_events: 100\n  max_bytes: 65536\n  retention_secs: 60\n  keepalive_secs: 5\n  position_interval_secs: 0.5\n  metrics_interval_secs: 2\n  session_ttl_secs: 600\n  max_retained_bytes: 10485760\n  max_readers: 4\n  queue_timeout_secs: 7200\n  max_run_secs: 900\n',
      ),
      TASKS_KEEPALIVE_SECS: '20',
      TASKS_MAX_RUN_SECS: '1800',
    });
    expect(config.tasks).toEqual({
      maxEvents: 100,
      maxBytes: 65536,
      retentionMs: 60_000,
      maxRetainedBytes: 10 * 1024 * 1024,
      maxReaders: 4,
      keepaliveMs: 20_000,
      positionIntervalMs: 500,
      metricsIntervalMs: 2000,
      sessionTtlMs: 600_000,
      queueTimeoutMs: 7_200_000,
      maxRunMs: 1_800_000,
    });
  });

  it('names every bad or unknown key', () => {
    try {
      loadConfig({ CONFIG_FILE: file('tasks:\n  max_events: 3\n  keepalive_secs: 0\n  colour: red\n'), TASKS_MAX_BYTES: 'lots' });
      throw new Error('expected a ConfigError');
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      const problems = (e as ConfigError).problems;
      expect(problems).toEqual(
        expect.arrayContaining([
          expect.stringMatching(/^tasks\.max_events \(config file\) must be an integer >= 16/),
          expect.stringMatching(/^tasks\.keepalive_secs \(config file\) must be a number > 0/),
          expect.stringMatching(/^tasks\.colour \(config file\) is not a tasks setting/),
          expect.stringMatching(/^TASKS_MAX_BYTES must be an integer >= 4096/),
        ]),
      );
    }
  });
});
