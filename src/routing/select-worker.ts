import { LiveWorker } from '../registry/live-worker';

/**
 * Picks the worker for a request: among workers that serve the model and have a free slot, the
 * lowest load wins; ties go to the worker assigned least recently (round-robin). Pure and O(n).
 */
export function selectWorker(workers: Iterable<LiveWorker>, model: string): LiveWorker | undefined {
  let best: LiveWorker | undefined;
  for (const w of workers) {
    if (w.freeSlots <= 0 || !w.supports(model)) continue;
    if (!best || w.load < best.load || (w.load === best.load && w.lastAssignedSeq < best.lastAssignedSeq)) best = w;
  }
  return best;
}
