import { FailedAuthLimiter } from '../auth/failed-auth-limiter';

/**
 * Admission to the worker-secret scrypt check, per limiter key (address and provider). The
 * limiter records a failure only once its check is over, so on its own it let 40 parallel
 * wrong-secret handshakes from one address all run scrypt; here every check still in flight
 * counts as a failure-to-be: failures in the window plus checks in flight may not exceed the
 * limit. Only unknown material comes here — a secret the gateway already knows to be right is
 * accepted without scrypt and without asking (ProvidersService.isVerifiedWorkerSecret).
 */
export class WorkerAuthGate {
  private readonly inFlight = new Map<string, number>();

  constructor(
    private readonly limiter: FailedAuthLimiter,
    private readonly maxFailures: number,
  ) {}

  /** Claims one check for `key`; false when the key is blocked or its allowance is taken. */
  tryBegin(key: string): boolean {
    if (this.limiter.isBlocked(key)) return false;
    const running = this.inFlight.get(key) ?? 0;
    if (this.limiter.failureCount(key) + running >= this.maxFailures) return false;
    this.inFlight.set(key, running + 1);
    return true;
  }

  /** Ends a check claimed by `tryBegin`; record its failure (if any) in the same synchronous step. */
  end(key: string): void {
    const running = this.inFlight.get(key) ?? 0;
    if (running <= 1) this.inFlight.delete(key);
    else this.inFlight.set(key, running - 1);
  }

  /** Checks in flight for `key` (tests, diagnostics). */
  running(key: string): number {
    return this.inFlight.get(key) ?? 0;
  }
}
