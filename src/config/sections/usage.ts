import { Env, Reader, TIMER } from '../../common/config-reader';

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

const KEYS = ['retention_days', 'flush_interval_secs', 'batch_size', 'buffer_size'];

export function readUsageConfig(env: Env, section: unknown, problems: string[]): UsageConfig {
  const yaml = section && typeof section === 'object' && !Array.isArray(section) ? (section as Record<string, unknown>) : {};
  if (section !== undefined && section !== null && yaml !== section) problems.push('usage (config file) must be a mapping');
  const r = new Reader(env, yaml, 'usage', KEYS);
  const retentionDays = r.number('USAGE_RETENTION_DAYS', 'retention_days', 90, { min: 0 });
  const batchSize = r.number('USAGE_BATCH_SIZE', 'batch_size', 500, { min: 1, max: MAX_USAGE_BATCH, integer: true });
  const config: UsageConfig = {
    retentionMs: Math.round(retentionDays * DAY_SECS * 1000),
    flushIntervalMs: r.seconds('USAGE_FLUSH_INTERVAL_SECS', 'flush_interval_secs', 5, TIMER),
    batchSize,
    bufferSize: r.number('USAGE_BUFFER_SIZE', 'buffer_size', 10_000, { min: 1, integer: true }),
  };
  if (config.bufferSize < batchSize && !r.problems.length) {
    problems.push(`USAGE_BUFFER_SIZE (${config.bufferSize}) must be at least USAGE_BATCH_SIZE (${batchSize})`);
  }
  for (const key of r.unknownKeys()) problems.push(`usage.${key} (config file) is not a usage setting (known: ${KEYS.join(', ')})`);
  problems.push(...r.problems);
  return config;
}
