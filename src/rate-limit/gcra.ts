import type { RateBucket, RateDecision } from './rate-limiter';

/**
 * GCRA (generic cell rate algorithm) in its continuous-state leaky-bucket form, the one pure
 * function both limiters share; redis-script.ts is the same arithmetic in Lua, line for line.
 *
 * A bucket of `limit` units refills continuously at limit / windowMs. The state is how much cost
 * the bucket holds (`level`) at `updatedAt`, which is the theoretical arrival time in disguise:
 * TAT = updatedAt + level / limit. `level` is kept in units of cost × windowMs, so that one unit
 * of cost adds `windowMs`, one millisecond drains `limit`, and the bucket holds `limit × windowMs`:
 * with integer costs, limits, windows and times every value is an integer, and doubles compute
 * them exactly (below 2^53, i.e. limit × windowMs up to 9e15: 1e8 units per day, 1.5e11 per
 * minute). No division happens until the values reported to the caller, which round up the time
 * to wait and down the cost that still fits.
 */
export interface GcraState {
  /** Cost held at `updatedAt`, in cost × windowMs units. */
  level: number;
  /** Epoch ms the level was computed for. */
  updatedAt: number;
  /** The window the level was computed with (a bucket whose window changes is rescaled). */
  windowMs: number;
}

export type GcraMode = 'consume' | 'charge';

/**
 * The most debt a charge can leave a bucket in: over its limit by at most 24 hours of refill. The
 * cost a charge adds comes from a worker's report (untrusted); without a cap one absurd report
 * (9e15 tokens) would refuse the tenant for millennia and put `resetAt` past the largest valid
 * Date. With it, `resetAt` is never more than windowMs + 24 h away, whatever the cost. A stored
 * level above the cap (written before it existed) is lowered to it on the next call.
 */
export const MAX_DEBT_MS = 24 * 60 * 60_000;

/*
 * And one charge moves a bucket at most ONE window over its limit past where it stood (the level
 * is capped at max(level, capacity) + capacity): a single report, however large, delays the
 * tenant's next request by at most `windowMs` more (a lying worker reporting 1e8 tokens once
 * costs a 1000-tokens-a-minute tenant one minute, not the 24 h ceiling). An honest request up to
 * a window over the limit is charged in full, as before. Many charges still add up, to MAX_DEBT_MS.
 */

export interface GcraStep {
  decision: RateDecision;
  /** The state to store, or undefined when nothing changed (a refusal, a cost of 0). */
  next?: GcraState;
  /** When `next` is empty again (no cost held): drop it then (Redis PEXPIRE, memory sweep). */
  expiresAt?: number;
}

export function gcraStep(state: GcraState | undefined, bucket: RateBucket, cost: number, now: number, mode: GcraMode): GcraStep {
  const { limit, windowMs } = bucket;
  const capacity = limit * windowMs;
  const ceiling = capacity + limit * MAX_DEBT_MS;
  let level0 = 0;
  let ref = now;
  if (state) {
    // A window change keeps the cost held (level / old window) and rounds up, never forgiving.
    const level = state.windowMs === windowMs ? state.level : Math.ceil((state.level * windowMs) / state.windowMs);
    // A clock behind the stored time (skew, a caller's `now`) drains nothing and moves nothing back.
    ref = Math.max(now, state.updatedAt);
    level0 = Math.min(ceiling, Math.max(0, level - limit * (ref - state.updatedAt)));
  }
  const wanted = level0 + cost * windowMs;
  let allowed: boolean;
  let level1: number;
  if (mode === 'charge') {
    level1 = Math.min(wanted, Math.max(level0, capacity) + capacity, ceiling);
    allowed = wanted <= capacity;
  } else {
    allowed = wanted <= capacity;
    level1 = allowed ? wanted : level0;
  }
  const remaining = level1 < capacity ? Math.floor((capacity - level1) / windowMs) : 0;
  const resetAt = ref + Math.ceil(level1 / limit);
  let retryAfterMs = 0;
  if (!allowed) {
    if (mode === 'charge') retryAfterMs = ref - now + Math.ceil((level1 - capacity) / limit);
    // More than the bucket holds can never pass: say when it is full again, at least 1 ms.
    else if (cost > limit) retryAfterMs = Math.max(1, resetAt - now);
    else retryAfterMs = ref - now + Math.ceil((wanted - capacity) / limit);
  }
  const decision: RateDecision = { allowed, limit, remaining, resetAt, retryAfterMs };
  if (mode === 'charge') decision.charged = Math.ceil((level1 - level0) / windowMs);
  if (cost > 0 && (allowed || mode === 'charge')) {
    return { decision, next: { level: level1, updatedAt: ref, windowMs }, expiresAt: resetAt };
  }
  return { decision };
}
