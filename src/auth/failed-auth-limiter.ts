import { AuthLimiterConfig } from '../config';
import { Clock, TimerHandle } from '../common/clock';
import { resolveClientAddress, trustedProxySet } from './client-address';

interface Entry {
  windowStart: number;
  failures: number;
  blockedUntil: number;
}

/** Bound on tracked clients, so a flood of spoofed addresses cannot grow memory without limit. */
const MAX_ENTRIES = 100_000;

/**
 * Failed worker-authentication limiter, per key (see `scopedKey`): `maxFailures` failures within `windowMs`
 * block the client for `blockMs`. Entries expire on their own (lazy check plus a periodic sweep).
 */
export class FailedAuthLimiter {
  private readonly entries = new Map<string, Entry>();
  private readonly trusted: ReadonlySet<string>;
  private sweepTimer: TimerHandle | undefined;

  constructor(
    private readonly config: AuthLimiterConfig,
    private readonly clock: Clock,
  ) {
    this.trusted = trustedProxySet(config.trustedProxies);
    this.sweepTimer = clock.setInterval(() => this.sweep(), Math.max(config.windowMs, config.blockMs));
  }

  stop(): void {
    if (this.sweepTimer) this.clock.clearInterval(this.sweepTimer);
    this.sweepTimer = undefined;
  }

  /**
   * The client a connection speaks for: the socket peer, or — only when the peer is a configured
   * trusted proxy — the nearest untrusted address it forwarded for (see client-address.ts).
   */
  clientKey(peerAddress: string | undefined, headers: Record<string, string | string[] | undefined>): string {
    return resolveClientAddress(peerAddress, headers, this.trusted);
  }

  /**
   * The limiter key for a client authenticating against one provider. Failures are counted per
   * (client, provider): a worker with a stale secret must not lock out the other providers' workers
   * on the same host, while guessing one provider's secret is still throttled.
   */
  scopedKey(clientKey: string, provider: string): string {
    // Bounded: the provider name comes from the URL (real names are at most 64 characters).
    return JSON.stringify([clientKey, provider.slice(0, 128)]);
  }

  isBlocked(key: string): boolean {
    const e = this.live(key);
    return !!e && e.blockedUntil > this.clock.now();
  }

  /** Failures counted for `key` in its current window (0 when none or expired). */
  failureCount(key: string): number {
    const e = this.live(key);
    return e && this.clock.now() - e.windowStart < this.config.windowMs ? e.failures : 0;
  }

  recordFailure(key: string): void {
    const now = this.clock.now();
    let e = this.live(key);
    if (!e) {
      if (this.entries.size >= MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value as string);
      e = { windowStart: now, failures: 0, blockedUntil: 0 };
      this.entries.set(key, e);
    }
    if (now - e.windowStart >= this.config.windowMs) {
      e.windowStart = now;
      e.failures = 0;
    }
    e.failures++;
    if (e.failures >= this.config.maxFailures) e.blockedUntil = now + this.config.blockMs;
  }

  /** Number of tracked clients (for tests and diagnostics). */
  size(): number {
    return this.entries.size;
  }

  private live(key: string): Entry | undefined {
    const e = this.entries.get(key);
    if (e && this.expired(e, this.clock.now())) {
      this.entries.delete(key);
      return undefined;
    }
    return e;
  }

  private expired(e: Entry, now: number): boolean {
    return e.blockedUntil <= now && now - e.windowStart >= this.config.windowMs;
  }

  private sweep(): void {
    const now = this.clock.now();
    for (const [key, e] of this.entries) if (this.expired(e, now)) this.entries.delete(key);
  }
}
