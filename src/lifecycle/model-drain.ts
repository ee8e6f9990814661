import type { Clock } from '../common/clock';
import type { Fleet } from '../fleet/fleet.service';
import type { RunningPart } from './running-task';

/**
 * Takes `model` out of routing on the part's worker (the hold is recorded on the part); true at
 * once when none of its requests for it is in flight, else resolves true once none is, or false
 * at the drain deadline (or when the part ends meanwhile: `rp.stopDrain`).
 */
export function drainModel(fleet: Fleet, clock: Clock, timeoutMs: number, rp: RunningPart, model: string): true | Promise<boolean> {
  const { worker } = rp;
  fleet.holdOut(worker, model);
  rp.holds.push(model);
  if (fleet.inFlightFor(worker, model) === 0) return true;
  return new Promise((resolve) => {
    let done = false;
    const finish = (drained: boolean) => {
      if (done) return;
      done = true;
      stopWatching();
      clock.clearTimeout(timer);
      rp.stopDrain = undefined;
      resolve(drained);
    };
    const stopWatching = fleet.watchReleases(worker, () => {
      if (fleet.inFlightFor(worker, model) === 0) finish(true);
    });
    const timer = clock.setTimeout(() => finish(false), timeoutMs);
    rp.stopDrain = () => finish(false);
  });
}
