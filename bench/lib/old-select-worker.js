'use strict';
// The routing algorithm from before the routing rewrite, timed by bench/routing.js for comparison.

/*
 * REFERENCE ONLY — the selection algorithm from before the routing rewrite, copied verbatim (types
 * removed) from `git show 232bacd:src/routing/select-worker.ts`. Not used by the gateway any more.
 * At 232bacd the dispatcher called it as selectWorker(this.workersOfEnabledProviders(), model),
 * i.e. over every worker of every enabled provider, whatever their models.
 */
/**
 * Picks the worker for a request: among workers that serve the model and have a free slot, the
 * lowest load wins; ties go to the worker assigned least recently (round-robin). Pure and O(n).
 */
function selectWorker(workers, model) {
  let best;
  for (const w of workers) {
    if (w.freeSlots <= 0 || !w.supports(model)) continue;
    if (!best || w.load < best.load || (w.load === best.load && w.lastAssignedSeq < best.lastAssignedSeq)) best = w;
  }
  return best;
}

module.exports = { selectWorker };
