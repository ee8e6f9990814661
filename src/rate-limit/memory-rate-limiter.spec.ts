import { FakeClock } from '../../test/support/fake-clock';
import { MemoryRateLimiter } from './memory-rate-limiter';
import { onDecision, RateBucket, RateDecision } from './rate-limiter';

const MINUTE = 60_000;
/** 10 per minute: one unit comes back every 6 s. */
const rpm10: RateBucket = { key: 'rpm:tenant:acme', limit: 10, windowMs: MINUTE };

describe('MemoryRateLimiter (GCRA)', () => {
  let clock: FakeClock;
  let limiter: MemoryRateLimiter;
  beforeEach(() => {
    clock = new FakeClock();
    limiter = new MemoryRateLimiter(clock);
  });
  afterEach(() => limiter.close());

  it('allows exactly `limit` from a fresh bucket at one instant and refuses the next', () => {
    const decisions = Array.from({ length: 100 }, () => limiter.tryConsume(rpm10, 1));
    expect(decisions.filter((d) => d.allowed)).toHaveLength(10);
    expect(decisions.slice(0, 10).every((d) => d.allowed)).toBe(true);
    expect(decisions.slice(0, 10).map((d) => d.remaining)).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
    expect(decisions[0]).toEqual({ allowed: true, limit: 10, remaining: 9, resetAt: clock.now() + 6000, retryAfterMs: 0 });
    expect(decisions[9]).toEqual({ allowed: true, limit: 10, remaining: 0, resetAt: clock.now() + MINUTE, retryAfterMs: 0 });
  });

  it('refuses with remaining 0, resetAt when full again and retryAfterMs until one unit is back', () => {
    for (let i = 0; i < 10; i++) limiter.tryConsume(rpm10, 1);
    const start = clock.now();
    expect(limiter.tryConsume(rpm10, 1)).toEqual({ allowed: false, limit: 10, remaining: 0, resetAt: start + MINUTE, retryAfterMs: 6000 });
    clock.advance(1000);
    expect(limiter.tryConsume(rpm10, 1)).toEqual({ allowed: false, limit: 10, remaining: 0, resetAt: start + MINUTE, retryAfterMs: 5000 });
    // A refusal takes nothing: the state is the same after any number of them.
    for (let i = 0; i < 50; i++) limiter.tryConsume(rpm10, 1);
    clock.advance(4999);
    expect(limiter.tryConsume(rpm10, 1)).toMatchObject({ allowed: false, retryAfterMs: 1 });
    clock.advance(1);
    expect(limiter.tryConsume(rpm10, 1)).toEqual({ allowed: true, limit: 10, remaining: 0, resetAt: start + MINUTE + 6000, retryAfterMs: 0 });
  });

  it('recovers continuously: one unit per windowMs / limit, all of it after windowMs', () => {
    for (let i = 0; i < 10; i++) limiter.tryConsume(rpm10, 1);
    clock.advance(3 * 6000);
    expect(limiter.tryConsume(rpm10, 0)).toMatchObject({ allowed: true, remaining: 3 });
    expect([1, 2, 3, 4].map(() => limiter.tryConsume(rpm10, 1).allowed)).toEqual([true, true, true, false]);
    clock.advance(MINUTE);
    expect(limiter.tryConsume(rpm10, 0)).toEqual({ allowed: true, limit: 10, remaining: 10, resetAt: clock.now(), retryAfterMs: 0 });
  });

  it('takes variable costs whole or not at all', () => {
    expect(limiter.tryConsume(rpm10, 4)).toMatchObject({ allowed: true, remaining: 6 });
    // 7 does not fit in 6: nothing is taken; one more unit must drain (6 s) before it would.
    expect(limiter.tryConsume(rpm10, 7)).toMatchObject({ allowed: false, remaining: 6, retryAfterMs: 6000 });
    expect(limiter.tryConsume(rpm10, 6)).toMatchObject({ allowed: true, remaining: 0 });
    expect(limiter.tryConsume(rpm10, 3)).toMatchObject({ allowed: false, retryAfterMs: 18_000 });
  });

  it('never allows a cost above the limit, and says when the bucket is full again', () => {
    expect(limiter.tryConsume(rpm10, 11)).toEqual({ allowed: false, limit: 10, remaining: 10, resetAt: clock.now(), retryAfterMs: 1 });
    limiter.tryConsume(rpm10, 2);
    expect(limiter.tryConsume(rpm10, 11)).toMatchObject({ allowed: false, remaining: 8, retryAfterMs: 12_000 });
  });

  it('cost 0 is a pure check: allowed unless over the limit, takes nothing, creates no bucket', () => {
    expect(limiter.tryConsume(rpm10, 0)).toEqual({ allowed: true, limit: 10, remaining: 10, resetAt: clock.now(), retryAfterMs: 0 });
    expect(limiter.size()).toBe(0);
    limiter.tryConsume(rpm10, 10);
    // Exactly at the limit is not over it: the token-limit check lets the request start.
    expect(limiter.tryConsume(rpm10, 0)).toMatchObject({ allowed: true, remaining: 0 });
    expect(limiter.tryConsume(rpm10, 1).allowed).toBe(false);
  });

  it('charge adds cost unconditionally; over the limit, cost-0 checks are refused until it drains', () => {
    const tpm: RateBucket = { key: 'tpm:key:k1', limit: 1000, windowMs: MINUTE };
    expect(limiter.tryConsume(tpm, 0).allowed).toBe(true);
    // The worker reports 1500 tokens: 500 over a 1000/min limit, 60 ms per token to drain.
    expect(limiter.charge(tpm, 1500)).toEqual({
      allowed: false,
      limit: 1000,
      remaining: 0,
      resetAt: clock.now() + 90_000,
      retryAfterMs: 30_000,
      charged: 1500,
    });
    expect(limiter.tryConsume(tpm, 0)).toMatchObject({ allowed: false, retryAfterMs: 30_000 });
    clock.advance(29_999);
    expect(limiter.tryConsume(tpm, 0)).toMatchObject({ allowed: false, retryAfterMs: 1 });
    clock.advance(1);
    expect(limiter.tryConsume(tpm, 0)).toMatchObject({ allowed: true, remaining: 0 });
    // A charge that stays within the limit reports allowed, with what is left.
    clock.advance(MINUTE);
    expect(limiter.charge(tpm, 400)).toEqual({ allowed: true, limit: 1000, remaining: 600, resetAt: clock.now() + 24_000, retryAfterMs: 0, charged: 400 });
    // One charge moves the bucket at most one window over its limit past where it stood.
    expect(limiter.charge(tpm, 5000)).toMatchObject({ allowed: false, retryAfterMs: MINUTE, charged: 1600 });
  });

  it('uses the caller-supplied `now` instead of the clock, and never drains backwards', () => {
    const t0 = clock.now();
    for (let i = 0; i < 10; i++) limiter.tryConsume(rpm10, 1, t0 + 6000);
    expect(limiter.tryConsume(rpm10, 1, t0 + 12_000)).toMatchObject({ allowed: true, retryAfterMs: 0 });
    // An earlier `now` (a skewed caller) sees the later state, and waits from its own time.
    expect(limiter.tryConsume(rpm10, 1, t0)).toMatchObject({ allowed: false, retryAfterMs: 18_000 });
  });

  it("keeps the cost held when a bucket's window changes (rescaled, rounded up)", () => {
    limiter.tryConsume(rpm10, 5);
    const perHour = { ...rpm10, windowMs: 60 * MINUTE };
    expect(limiter.tryConsume(perHour, 0)).toMatchObject({ allowed: true, remaining: 5, resetAt: clock.now() + 30 * MINUTE });
  });

  it('keys are independent', () => {
    limiter.tryConsume(rpm10, 10);
    expect(limiter.tryConsume({ ...rpm10, key: 'rpm:tenant:other' }, 1).allowed).toBe(true);
    expect(limiter.tryConsume(rpm10, 1).allowed).toBe(false);
  });

  it('drops buckets back at full capacity (lazily and by the periodic sweep)', () => {
    limiter.tryConsume(rpm10, 3);
    limiter.tryConsume({ ...rpm10, key: 'b' }, 10);
    expect(limiter.size()).toBe(2);
    clock.advance(3 * 6000 - 1);
    expect(limiter.sweep()).toBe(0);
    clock.advance(1);
    expect(limiter.sweep()).toBe(1);
    expect(limiter.size()).toBe(1);
    // The timer sweeps on its own (every minute by default).
    clock.advance(MINUTE);
    expect(limiter.size()).toBe(0);
    expect(limiter.tryConsume({ ...rpm10, key: 'b' }, 0)).toMatchObject({ remaining: 10 });
  });

  it('holds at most maxBuckets, forgetting the least recently used one', () => {
    const small = new MemoryRateLimiter(clock, { maxBuckets: 3, sweepIntervalMs: 0 });
    for (const key of ['a', 'b', 'c']) small.tryConsume({ ...rpm10, key }, 10);
    small.tryConsume({ ...rpm10, key: 'a' }, 1); // refused, but used: 'b' is now the oldest
    small.tryConsume({ ...rpm10, key: 'd' }, 1);
    expect(small.size()).toBe(3);
    expect(small.evictions).toBe(1);
    expect(small.tryConsume({ ...rpm10, key: 'a' }, 1).allowed).toBe(false);
    expect(small.tryConsume({ ...rpm10, key: 'b' }, 0).remaining).toBe(10);
    expect(clock.pendingTimers()).toBe(1); // only `limiter`'s sweep
  });

  it('stops its sweep timer on close', async () => {
    expect(clock.pendingTimers()).toBe(1);
    await limiter.close();
    expect(clock.pendingTimers()).toBe(0);
  });

  it('answers synchronously, and onDecision runs in the same tick', () => {
    expect(limiter.synchronous).toBe(true);
    const result = limiter.tryConsume(rpm10, 1);
    expect(result).not.toBeInstanceOf(Promise);
    let seen: RateDecision | undefined;
    const mapped = onDecision(result, (d) => {
      seen = d;
      return d.allowed ? 'go' : 'stop';
    });
    expect(mapped).toBe('go');
    expect(seen).toBe(result);
  });

  it('reports Redis as disabled', () => {
    expect(limiter.health()).toEqual({ status: 'disabled' });
  });

  it.each([
    ['an empty key', { key: '', limit: 1, windowMs: 1 }, 1],
    ['limit 0', { key: 'k', limit: 0, windowMs: 1 }, 1],
    ['limit NaN', { key: 'k', limit: Number.NaN, windowMs: 1 }, 1],
    ['windowMs 0', { key: 'k', limit: 1, windowMs: 0 }, 1],
    ['windowMs Infinity', { key: 'k', limit: 1, windowMs: Infinity }, 1],
    ['cost -1', { key: 'k', limit: 1, windowMs: 1 }, -1],
    ['cost NaN', { key: 'k', limit: 1, windowMs: 1 }, Number.NaN],
  ])('throws a RangeError for %s (a bug at the call site)', (_what, bucket, cost) => {
    expect(() => limiter.tryConsume(bucket, cost)).toThrow(RangeError);
    expect(() => limiter.charge(bucket, cost)).toThrow(RangeError);
  });
});
