/**
 * The rate-limiter port: per-tenant / per-API-key limits ask it whether a request may go ahead.
 * Nothing here knows HTTP; every value is plain, serialisable data. See docs/rate-limits.md.
 */

/** One limit: `limit` units of cost per `windowMs`, tracked under an opaque caller-chosen key. */
export interface RateBucket {
  /** Opaque, chosen by the caller: `rpm:tenant:acme`, `tpm:key:<id>`, ... */
  key: string;
  /** Units of cost the bucket holds (requests, tokens); a full bucket allows this much at once. */
  limit: number;
  /** Time in which an empty bucket refills completely (continuously, at limit / windowMs). */
  windowMs: number;
}

export interface RateDecision {
  /** tryConsume: the cost was taken. charge: the bucket is not over its limit after the charge. */
  allowed: boolean;
  limit: number;
  /** Whole units of cost that could be taken right now (after this call), never negative. */
  remaining: number;
  /** Epoch ms at which the bucket is full again (no cost held); now when it is already full. */
  resetAt: number;
  /** 0 when allowed; otherwise ms until the same call would be allowed (at least 1). */
  retryAfterMs: number;
  /**
   * charge only: the cost actually added. Less than asked when one charge would have put the
   * bucket more than one window over its limit (gcra.ts): the caller may log who reported it.
   */
  charged?: number;
}

export type RedisStatus = 'ok' | 'down' | 'disabled';

/** What GET /health shows about the limiter's Redis (never the password). */
export interface RateLimiterHealth {
  status: RedisStatus;
  /** host:port of the configured Redis. */
  url?: string;
  /** ISO time of the last ok/down transition. */
  since?: string;
}

/** Either a decision now (in-memory limiter) or later (Redis limiter). */
export type MaybePromise<T> = T | Promise<T>;

/**
 * Atomic check-and-take over GCRA buckets (see gcra.ts).
 *
 * The in-memory implementation answers synchronously (`synchronous === true`, plain values); the
 * Redis one always answers with a Promise that never rejects (Redis trouble means a local
 * decision, not an error). Only invalid arguments throw, synchronously, as a RangeError: they are
 * bugs at the call site, never a Redis condition.
 */
export abstract class RateLimiter {
  /** True when every call returns a plain RateDecision (no Promise). */
  abstract readonly synchronous: boolean;

  /**
   * Takes `cost` from the bucket if it fits, atomically; nothing is taken when refused.
   * `cost` 0 is a pure check: allowed while the bucket is not over its limit (a `charge` can
   * push it over). `now` (epoch ms) overrides the clock of the in-memory limiter; the Redis
   * limiter always uses the Redis server's clock, so replicas with skewed clocks agree.
   */
  abstract tryConsume(bucket: RateBucket, cost: number, now?: number): MaybePromise<RateDecision>;

  /**
   * Adds `cost` unconditionally (tokens reported when a request ends), but at most up to one
   * window over the limit past the bucket's level (`charged` says how much was added). May push the
   * bucket over its limit; then `allowed` is false and `retryAfterMs` says when a cost-0 check
   * passes again (never more than one window later than before this charge).
   */
  abstract charge(bucket: RateBucket, cost: number, now?: number): MaybePromise<RateDecision>;

  /** Redis status for GET /health: `disabled` for the in-memory limiter. */
  abstract health(): RateLimiterHealth;

  /** Releases timers and connections. */
  abstract close(): Promise<void>;
}

/**
 * Runs `fn` on the decision: at once (same tick) when the limiter answered synchronously,
 * after the Promise otherwise. Lets the request path stay synchronous without Redis.
 */
export function onDecision<T>(result: MaybePromise<RateDecision>, fn: (decision: RateDecision) => T): MaybePromise<T> {
  return result instanceof Promise ? result.then(fn) : fn(result);
}

/** Throws a RangeError for arguments no limiter can honour (a bug at the call site). */
export function assertValidCall(bucket: RateBucket, cost: number): void {
  if (!bucket || typeof bucket.key !== 'string' || bucket.key === '') throw new RangeError('rate limit bucket needs a non-empty key');
  if (!Number.isFinite(bucket.limit) || bucket.limit <= 0)
    throw new RangeError(`rate limit "${bucket.key}": limit must be a positive number, got ${bucket.limit}`);
  if (!Number.isFinite(bucket.windowMs) || bucket.windowMs <= 0) {
    throw new RangeError(`rate limit "${bucket.key}": windowMs must be a positive number, got ${bucket.windowMs}`);
  }
  if (!Number.isFinite(cost) || cost < 0) throw new RangeError(`rate limit "${bucket.key}": cost must be a number >= 0, got ${cost}`);
}
