/** Where the handlers report (Nest's Logger fits). */
export interface ProcessErrorLog {
  error(message: string): void;
}

export interface ProcessErrorOptions {
  log: ProcessErrorLog;
  /** Called once when the process should stop (gracefully: drain, flush, exit 1). */
  stop: (reason: string) => void;
  /** Uncaught exceptions tolerated within `burstWindowMs` before stopping. */
  burstLimit?: number;
  burstWindowMs?: number;
  now?: () => number;
}

export const UNCAUGHT_BURST_LIMIT = 10;
export const UNCAUGHT_BURST_WINDOW_MS = 60_000;

/**
 * Process-level last resorts, installed once the gateway serves (`main.ts`). Node's default ends
 * the process on either event, and with it every client's request and every worker's session: one
 * bug reachable from a worker frame or a request would be a denial of service.
 *
 * - An **unhandled rejection** is logged (with its stack) and the gateway keeps serving: a
 *   rejected promise left no synchronous code half-run, so nothing is corrupted that was not
 *   already answered (admission and frame handling answer their own failures).
 * - An **uncaught exception** is logged and the gateway keeps serving; but when more than
 *   `burstLimit` happen within `burstWindowMs`, something is failing in a loop and the process
 *   is stopped gracefully (workers drained, write-behind queues flushed, exit 1) so that the
 *   orchestrator restarts a clean one.
 *
 * Returns a function that removes the handlers.
 */
export function installProcessErrorHandlers(proc: NodeJS.EventEmitter, options: ProcessErrorOptions): () => void {
  const limit = options.burstLimit ?? UNCAUGHT_BURST_LIMIT;
  const windowMs = options.burstWindowMs ?? UNCAUGHT_BURST_WINDOW_MS;
  const now = options.now ?? Date.now;
  let recent: number[] = [];
  let stopping = false;
  const describe = (e: unknown) => (e instanceof Error ? (e.stack ?? e.message) : safeString(e));

  const onRejection = (reason: unknown) => {
    options.log.error(`unhandled promise rejection (the gateway keeps serving): ${describe(reason)}`);
  };
  const onException = (err: unknown) => {
    const t = now();
    recent = recent.filter((at) => t - at < windowMs);
    recent.push(t);
    if (recent.length <= limit || stopping) {
      options.log.error(`uncaught exception (the gateway keeps serving): ${describe(err)}`);
      return;
    }
    stopping = true;
    options.log.error(`uncaught exception, the ${recent.length}th within ${windowMs / 1000} s: stopping the gateway: ${describe(err)}`);
    options.stop(`${recent.length} uncaught exceptions within ${windowMs / 1000} s`);
  };
  proc.on('unhandledRejection', onRejection);
  proc.on('uncaughtException', onException);
  return () => {
    proc.off('unhandledRejection', onRejection);
    proc.off('uncaughtException', onException);
  };
}

function safeString(v: unknown): string {
  try {
    return String(v);
  } catch {
    return '(unprintable value)';
  }
}
