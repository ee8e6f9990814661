import { Clock, systemClock, TimerHandle } from '../common/clock';
import { GcraMode, GcraState, gcraStep } from './gcra';
import { assertValidCall, RateBucket, RateDecision, RateLimiter, RateLimiterHealth } from './rate-limiter';

interface Entry extends GcraState {
  /** The bucket is empty (full capacity) from then on: the entry may be dropped. */
  expiresAt: number;
}

export interface MemoryRateLimiterOptions {
  /** Buckets kept at most; beyond it the least recently used one is forgotten. */
  maxBuckets?: number;
  /** Period of the sweep that drops buckets back at full capacity; 0 = no timer. */
  sweepIntervalMs?: number;
}

export const DEFAULT_MAX_BUCKETS = 100_000;
export const DEFAULT_SWEEP_INTERVAL_MS = 60_000;

/**
 * GCRA buckets in a Map, for one process: synchronous, no I/O. Time comes from the Clock port
 * (or the caller's `now`). Memory is bounded: a bucket back at full capacity is the same as no
 * bucket, so it is dropped (lazily, and by a periodic sweep); past `maxBuckets` the least recently
 * used bucket is forgotten (which can only let that key through sooner, never refuse more).
 */
export class MemoryRateLimiter extends RateLimiter {
  readonly synchronous = true;
  /** Insertion order is recency order: every access moves a bucket to the end. */
  private readonly buckets = new Map<string, Entry>();
  private readonly maxBuckets: number;
  private sweepTimer: TimerHandle | undefined;
  private evicted = 0;

  constructor(
    private readonly clock: Clock = systemClock,
    options: MemoryRateLimiterOptions = {},
  ) {
    super();
    this.maxBuckets = Math.max(1, options.maxBuckets ?? DEFAULT_MAX_BUCKETS);
    const every = options.sweepIntervalMs ?? DEFAULT_SWEEP_INTERVAL_MS;
    if (every > 0) this.sweepTimer = clock.setInterval(() => this.sweep(), every);
  }

  tryConsume(bucket: RateBucket, cost: number, now?: number): RateDecision {
    return this.step(bucket, cost, now ?? this.clock.now(), 'consume');
  }

  charge(bucket: RateBucket, cost: number, now?: number): RateDecision {
    return this.step(bucket, cost, now ?? this.clock.now(), 'charge');
  }

  health(): RateLimiterHealth {
    return { status: 'disabled' };
  }

  /** Buckets currently held (those not yet back at full capacity, give or take the sweep). */
  size(): number {
    return this.buckets.size;
  }

  /** Buckets forgotten while still holding cost, because `maxBuckets` was reached. */
  get evictions(): number {
    return this.evicted;
  }

  /** Drops every bucket back at full capacity; returns how many were dropped. */
  sweep(now = this.clock.now()): number {
    let dropped = 0;
    for (const [key, entry] of this.buckets) {
      if (entry.expiresAt <= now) {
        this.buckets.delete(key);
        dropped++;
      }
    }
    return dropped;
  }

  async close(): Promise<void> {
    if (this.sweepTimer) this.clock.clearInterval(this.sweepTimer);
    this.sweepTimer = undefined;
  }

  private step(bucket: RateBucket, cost: number, now: number, mode: GcraMode): RateDecision {
    assertValidCall(bucket, cost);
    let entry = this.buckets.get(bucket.key);
    if (entry) {
      this.buckets.delete(bucket.key);
      if (entry.expiresAt <= now) entry = undefined;
    }
    const { decision, next, expiresAt } = gcraStep(entry, bucket, cost, now, mode);
    const keep: Entry | undefined = next ? { ...next, expiresAt: expiresAt as number } : entry;
    if (keep) {
      if (this.buckets.size >= this.maxBuckets) this.evictOldest(now);
      this.buckets.set(bucket.key, keep);
    }
    return decision;
  }

  private evictOldest(now: number): void {
    const oldest = this.buckets.entries().next().value as [string, Entry] | undefined;
    if (!oldest) return;
    this.buckets.delete(oldest[0]);
    if (oldest[1].expiresAt > now) this.evicted++;
  }
}
