import type { WorkerSession } from '../fleet/worker-session';
import type { WorkerSnapshot } from '../fleet/worker-snapshot';

/** A pool's slots: busy + free = total, always. */
export interface PoolSlots {
  total: number;
  busy: number;
  free: number;
}

export interface PoolCapacity {
  /** Concurrency of the workers that take new work: draining workers are in none of the three. */
  slots: PoolSlots;
  /** Requests the gateway runs on the pool's workers (draining ones included). */
  inFlight: number;
  /** A connected worker is neither draining nor ejected by routing (it may take new work). */
  serving: boolean;
}

/**
 * The one computation of a pool's slots, shared by `/v1/capabilities` and `/v1/pools/:id/health`
 * (they used to disagree). Per worker that is not draining: its `max_concurrent` in `total`; its
 * load — requests assigned, cancelled ones still held, and load it reported beyond those — in
 * `busy` (at most `max_concurrent`); the rest in `free`. An ejected worker's slots count (it is
 * connected and comes back), but it does not make the pool ready.
 */
export function poolCapacity(workers: Iterable<WorkerSession>, isEjected: (w: WorkerSnapshot) => boolean): PoolCapacity {
  const slots: PoolSlots = { total: 0, busy: 0, free: 0 };
  let inFlight = 0;
  let serving = false;
  for (const w of workers) {
    inFlight += w.assigned.size;
    if (w.draining) continue;
    const busy = Math.min(w.load, w.maxConcurrent);
    slots.total += w.maxConcurrent;
    slots.busy += busy;
    slots.free += w.maxConcurrent - busy;
    if (!serving && !isEjected(w)) serving = true;
  }
  return { slots, inFlight, serving };
}
