import { Env, Reader, TIMER_OR_ZERO } from '../../common/config-reader';

/** The `queue:` section of the config file. */
export interface QueueConfig {
  /** A request waiting longer than this is promoted one priority level (per period); 0 = never. */
  agingMs: number;
}

export function readQueueConfig(env: Env, section: unknown, problems: string[]): QueueConfig {
  const yaml = section && typeof section === 'object' && !Array.isArray(section) ? (section as Record<string, unknown>) : {};
  if (section !== undefined && section !== null && yaml !== section) problems.push('queue (config file) must be a mapping');
  const r = new Reader(env, yaml, 'queue', ['aging_secs']);
  const config = { agingMs: r.seconds('QUEUE_AGING_SECS', 'aging_secs', 10, TIMER_OR_ZERO) };
  for (const key of r.unknownKeys()) problems.push(`queue.${key} (config file) is not a queue setting (known: aging_secs)`);
  problems.push(...r.problems);
  return config;
}
