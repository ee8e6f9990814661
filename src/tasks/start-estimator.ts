import type { QueueStats } from '../queue/queue-stats';

/**
 * `predicted_start_ms`: milliseconds until a queued task is expected to reach a worker. Position
 * 1 is the next request its pool's workers take; at the pool's observed drain rate r (queued
 * requests leaving for a worker per ms, over its last 128 departures; see QueueStats) the
 * position-th departure comes after about position / r. 0 once the task runs; null while the
 * pool has no drain history (fewer than two queued requests ever left its queue).
 */
export function predictedStartMs(stats: QueueStats, pool: string, position: number, now: number): number | null {
  if (position <= 0) return 0;
  return stats.predictedWaitMs(pool, position, now) ?? null;
}
