import type { WorkerDirectory } from '../fleet/worker-index';
import { servesModel } from '../fleet/worker-snapshot';
import type { QueueStats } from '../queue/queue-stats';

/**
 * `predicted_start_ms`: milliseconds until a queued task is expected to reach a worker, from the
 * pool's observed **service rate** (docs/tasks.md#predicted-start).
 *
 * T is the pool's service time per slot for the task's model: an EWMA (weight 0.2) of how long
 * each completed request held its slot, assignment to completion (QueueStats.serviceMs), so it
 * exists from the first completion and idle time does not inflate it. S is the number of slots
 * able to serve the task: the capacity of the pool's non-draining workers that serve its model.
 * Busy, the S slots free up one every T / S on average, and the next one is on average half such
 * an interval away, so position p (1 = next) starts after about (p − ½) · T / S.
 *
 * 0 once the task runs; at least 1 while it waits; null before the pool's first completion or
 * while no connected worker of the pool serves the model.
 */
export function predictedStartMs(stats: QueueStats, pool: string, model: string, slots: number, position: number): number | null {
  if (position <= 0) return 0;
  const serviceMs = stats.serviceMs(pool, model);
  if (serviceMs === undefined || slots <= 0) return null;
  return Math.max(1, Math.round(((position - 0.5) * serviceMs) / slots));
}

/**
 * The slots able to serve a request for `model` in `pool`: the capacity of its connected,
 * non-draining workers that serve the model (by name or `*`). Looks only at the workers serving
 * that model and the wildcard ones, never at every worker.
 */
export function slotsServing(directory: WorkerDirectory, pool: string, model: string): number {
  let slots = 0;
  for (const w of directory.servingExactly(model)) if (w.provider === pool && !w.draining && servesModel(w, model)) slots += w.maxConcurrent;
  for (const w of directory.wildcardWorkers()) {
    if (w.provider === pool && !w.draining && !w.models.has(model) && servesModel(w, model)) slots += w.maxConcurrent;
  }
  return slots;
}

/**
 * The prediction for a task at `position` of `pool`'s queue waiting for `model`. Given a cache
 * (one per tick), the slots of a pool's model are counted once however many of its tasks wait.
 */
export function predictStart(
  stats: QueueStats,
  directory: WorkerDirectory,
  pool: string,
  model: string,
  position: number,
  slotCache?: Map<string, number>,
): number | null {
  if (position <= 0) return 0;
  const key = `${pool}\u0000${model}`;
  let slots = slotCache?.get(key);
  if (slots === undefined) {
    slots = slotsServing(directory, pool, model);
    slotCache?.set(key, slots);
  }
  return predictedStartMs(stats, pool, model, slots, position);
}
