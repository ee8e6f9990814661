import { Clock, TimerHandle } from '../common/clock';

export type { Clock, TimerHandle };

/**
 * The daemon's real clock. Unlike common's `systemClock` its timers are NOT unref'd: while the
 * worker waits to reconnect, the reconnect timer is what keeps the process alive.
 */
export const daemonClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
  setInterval: (fn, ms) => setInterval(fn, ms),
  clearInterval: (h) => clearInterval(h as NodeJS.Timeout),
};
