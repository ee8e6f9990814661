import { Env, Reader, TIMER_OR_ZERO } from '../../common/config-reader';
import { group, read, secs, yamlKeys } from '../setting';

/** The `queue:` section of the config file. */
export interface QueueConfig {
  /** A request waiting longer than this is promoted one priority level (per period); 0 = never. */
  agingMs: number;
}

export const QUEUE_SETTINGS = group('queue', 'queue', {
  aging: secs({
    env: 'QUEUE_AGING_SECS',
    yaml: 'aging_secs',
    default: 10,
    opts: TIMER_OR_ZERO,
    reload: 'restart',
    fields: ['agingMs'],
    doc: 'a queued request rises one priority level per this many seconds waited (`0` = never)',
  }),
});
const S = QUEUE_SETTINGS.settings;
const KEYS = yamlKeys(QUEUE_SETTINGS);

export function readQueueConfig(env: Env, section: unknown, problems: string[]): QueueConfig {
  const yaml = section && typeof section === 'object' && !Array.isArray(section) ? (section as Record<string, unknown>) : {};
  if (section !== undefined && section !== null && yaml !== section) problems.push('queue (config file) must be a mapping');
  const r = new Reader(env, yaml, 'queue', KEYS);
  const config = { agingMs: read(r, env, S.aging) };
  for (const key of r.unknownKeys()) problems.push(`queue.${key} (config file) is not a queue setting (known: ${KEYS.join(', ')})`);
  problems.push(...r.problems);
  return config;
}
