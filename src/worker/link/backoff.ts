export interface BackoffOptions {
  minMs: number;
  maxMs: number;
  /** Extra random delay as a fraction of the base delay (0.2 = up to +20 %). */
  jitter?: number;
  random?: () => number;
}

/**
 * Exponential reconnect delay: min, 2×min, 4×min … capped at max, each plus jitter so that a
 * fleet of workers cut off together does not reconnect in lockstep.
 */
export class Backoff {
  private attempt = 0;
  private readonly jitter: number;
  private readonly random: () => number;

  constructor(private readonly options: BackoffOptions) {
    this.jitter = options.jitter ?? 0.2;
    this.random = options.random ?? Math.random;
  }

  /** Number of delays handed out since the last reset. */
  get attempts(): number {
    return this.attempt;
  }

  /** The base (jitter-free) delay the next call to `next()` will start from. */
  peekBaseMs(): number {
    return Math.min(this.options.maxMs, this.options.minMs * 2 ** Math.min(this.attempt, 30));
  }

  next(): number {
    const base = this.peekBaseMs();
    this.attempt++;
    return Math.round(base + base * this.jitter * this.random());
  }

  reset(): void {
    this.attempt = 0;
  }
}
