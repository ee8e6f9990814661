import { WorkerSession } from './worker-session';

/**
 * Reconciles the gateway's slot accounting with a load the worker reported. The worker counted
 * only requests that reached it before it answered: with `mark` (the worker's `sentSeq` when the
 * answered ping went out) requests sent later are left out of the comparison, so a pong that
 * crossed newly assigned requests cannot give back held (cancelled) slots early. Without a mark
 * (a `models_update`, a pong nobody asked for) the report's moment is unknown: held slots stay
 * until their completion or grace period. O(slots of this worker), once per report.
 */
export function reconcileLoad(worker: WorkerSession, currentLoad: number, mark: number | undefined, forgetHeld: (id: string) => void): void {
  if (mark === undefined) {
    worker.externalLoad = Math.max(0, currentLoad - worker.pending);
    return;
  }
  let unseen = 0;
  for (const lease of worker.assigned.values()) if (lease.sentSeq > mark) unseen++;
  for (const slot of worker.held.values()) if (slot.sentSeq > mark) unseen++;
  // A lower load than we account for means cancelled requests have ended on the worker.
  for (const [id, slot] of worker.held) {
    if (worker.pending - unseen <= currentLoad) break;
    if (slot.sentSeq <= mark) forgetHeld(id);
  }
  worker.externalLoad = Math.max(0, currentLoad - (worker.pending - unseen));
}
