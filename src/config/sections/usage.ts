import { Env, Reader, TIMER } from '../../common/config-reader';
import { group, num, read, secs, yamlKeys } from '../setting';

/** The `usage:` section of the config file: usage records for chargeback (see docs/tenancy.md). */
export interface UsageConfig {
  /** Usage records older than this are deleted by the cleanup job; 0 = kept forever. */
  retentionMs: number;
  /** Records are kept in memory and written in one INSERT on this period (or sooner, per batch). */
  flushIntervalMs: number;
  /** Rows per INSERT; a buffer holding this many is written at once, without waiting for the period. */
  batchSize: number;
  /** Records held in memory at most; past it the oldest are dropped (and counted). */
  bufferSize: number;
}

const DAY_SECS = 24 * 3600;
/** 18 bound parameters per row: 1 000 rows stay under SQLite's 32 766 (and PostgreSQL's 65 535). */
export const MAX_USAGE_BATCH = 1000;

export const USAGE_SETTINGS = group('usage', 'usage', {
  retentionDays: num({
    env: 'USAGE_RETENTION_DAYS',
    yaml: 'retention_days',
    default: 90,
    opts: { min: 0 },
    reload: 'restart',
    fields: ['retentionMs'],
    doc: '[usage records](tenancy.md#usage-records) older than this are deleted by the cleanup job; fractions allowed; `0` = keep forever',
  }),
  flushInterval: secs({
    env: 'USAGE_FLUSH_INTERVAL_SECS',
    yaml: 'flush_interval_secs',
    default: 5,
    opts: TIMER,
    reload: 'restart',
    fields: ['flushIntervalMs'],
    doc: 'usage records are buffered in memory and written in one INSERT on this period (sooner when a batch is full)',
  }),
  batchSize: num({
    env: 'USAGE_BATCH_SIZE',
    yaml: 'batch_size',
    default: 500,
    opts: { min: 1, max: MAX_USAGE_BATCH, integer: true },
    reload: 'restart',
    fields: ['batchSize'],
    doc: `usage records per INSERT (1–${MAX_USAGE_BATCH})`,
  }),
  bufferSize: num({
    env: 'USAGE_BUFFER_SIZE',
    yaml: 'buffer_size',
    default: 10_000,
    opts: { min: 1, integer: true },
    reload: 'restart',
    fields: ['bufferSize'],
    doc: 'usage records held in memory at most; when the database falls behind, the oldest are dropped and counted (`switchboard_usage_records_dropped_total`). Must be at least `USAGE_BATCH_SIZE`',
  }),
});
const S = USAGE_SETTINGS.settings;
const KEYS = yamlKeys(USAGE_SETTINGS);

export function readUsageConfig(env: Env, section: unknown, problems: string[]): UsageConfig {
  const yaml = section && typeof section === 'object' && !Array.isArray(section) ? (section as Record<string, unknown>) : {};
  if (section !== undefined && section !== null && yaml !== section) problems.push('usage (config file) must be a mapping');
  const r = new Reader(env, yaml, 'usage', KEYS);
  const retentionDays = read(r, env, S.retentionDays);
  const batchSize = read(r, env, S.batchSize);
  const config: UsageConfig = {
    retentionMs: Math.round(retentionDays * DAY_SECS * 1000),
    flushIntervalMs: read(r, env, S.flushInterval),
    batchSize,
    bufferSize: read(r, env, S.bufferSize),
  };
  if (config.bufferSize < batchSize && !r.problems.length) {
    problems.push(`USAGE_BUFFER_SIZE (${config.bufferSize}) must be at least USAGE_BATCH_SIZE (${batchSize})`);
  }
  for (const key of r.unknownKeys()) problems.push(`usage.${key} (config file) is not a usage setting (known: ${KEYS.join(', ')})`);
  problems.push(...r.problems);
  return config;
}
