/**
 * Bounded waits for test helpers. A wait with no bound (a server's close, a socket's open, a child
 * process's exit, a browser's navigation) that never ends only fails at jest's test timeout, as
 * "Exceeded timeout of 90000 ms for a test", which names neither the step nor what did not happen.
 * Bounded, it fails in seconds with a message that says which wait it was.
 *
 * Bounds are generous (tests share two loaded cores): they catch hangs, they never time steps.
 */

/** Starting a gateway, a server or a child process. */
export const START_MS = 30_000;
/** Closing one (the gateway's own drain deadline is added where it applies). */
export const CLOSE_MS = 30_000;
/** A socket's open, a frame, a page's navigation or element. */
export const WAIT_MS = 20_000;

/** The error of a wait that did not end in time. */
export class DeadlineError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DeadlineError';
  }
}

/**
 * `promise`, or a DeadlineError "`what` within `ms` ms" (e.g. `'gateway close() did not finish'`)
 * if it has not settled by then. The error's stack is the caller's, so it points at the wait.
 * The promise itself is not cancelled: callers that own a resource clean it up themselves.
 */
export async function withDeadline<T>(promise: PromiseLike<T>, ms: number, what: string): Promise<T> {
  // Created now, thrown later: its stack shows where the test waited, not the timer's callback.
  const error = new DeadlineError(`${what} within ${ms} ms`);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(error), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
