import fc from 'fast-check';
import { GcraMode, GcraState, gcraStep, MAX_DEBT_MS } from './gcra';
import { RateBucket, RateDecision } from './rate-limiter';

const T0 = Date.UTC(2026, 10, 22);

const bucketArb = fc.record({
  key: fc.constant('k'),
  limit: fc.integer({ min: 1, max: 50 }),
  windowMs: fc.integer({ min: 1, max: 120_000 }),
});

interface Call {
  /** ms since the previous call */
  dt: number;
  cost: number;
  mode: GcraMode;
}

/** Calls whose costs are drawn up to `maxCost`; a tenth of them are charges. */
const callsArb = (maxCost: number, maxDt: number) =>
  fc.array(
    fc.record({
      dt: fc.integer({ min: 0, max: maxDt }),
      cost: fc.integer({ min: 0, max: maxCost }),
      mode: fc.constantFrom<GcraMode[]>('consume', 'consume', 'consume', 'consume', 'consume', 'consume', 'consume', 'consume', 'consume', 'charge'),
    }),
    { maxLength: 60 },
  );

/** Replays calls against the pure step; returns the final state, time and every decision. */
function replay(bucket: RateBucket, calls: Call[]): { state?: GcraState; now: number; decisions: Array<{ call: Call; d: RateDecision }> } {
  let state: GcraState | undefined;
  let now = T0;
  const decisions: Array<{ call: Call; d: RateDecision }> = [];
  for (const call of calls) {
    now += call.dt;
    const step = gcraStep(state, bucket, call.cost, now, call.mode);
    if (step.next) state = step.next;
    decisions.push({ call, d: step.decision });
  }
  return { state, now, decisions };
}

const consume = (state: GcraState | undefined, bucket: RateBucket, cost: number, now: number) => gcraStep(state, bucket, cost, now, 'consume').decision;

describe('GCRA properties', () => {
  it('at one instant, whatever the costs and charges, the allowed cost never exceeds the limit', () => {
    fc.assert(
      fc.property(bucketArb, fc.array(fc.integer({ min: 0, max: 60 }), { maxLength: 80 }), (bucket, costs) => {
        const { decisions } = replay(
          bucket,
          costs.map((cost) => ({ dt: 0, cost, mode: 'consume' as const })),
        );
        const allowed = decisions.filter((x) => x.d.allowed).reduce((sum, x) => sum + x.call.cost, 0);
        expect(allowed).toBeLessThanOrEqual(bucket.limit);
        // ... and it is greedy: a refusal means that cost did not fit in what was left.
        for (const { call, d } of decisions) if (!d.allowed) expect(call.cost).toBeGreaterThan(d.remaining);
      }),
    );
  });

  it('is exact with token-sized limits too (up to 1e8 per day): the whole limit in any pieces, then nothing', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 100_000_000 }),
        fc.integer({ min: 1, max: 86_400_000 }),
        fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 1, maxLength: 20 }),
        (limit, windowMs, weights) => {
          const bucket = { key: 'tpd', limit, windowMs };
          // Split `limit` into integer pieces that add up to it exactly.
          const total = weights.reduce((a, b) => a + b, 0) || 1;
          const pieces = weights.map((w) => Math.floor((w / total) * limit));
          pieces[0] += limit - pieces.reduce((a, b) => a + b, 0);
          const { state, now, decisions } = replay(
            bucket,
            pieces.map((cost) => ({ dt: 0, cost, mode: 'consume' as const })),
          );
          expect(decisions.every((x) => x.d.allowed)).toBe(true);
          expect(decisions[decisions.length - 1].d).toMatchObject({ remaining: 0, resetAt: now + windowMs });
          expect(consume(state, bucket, 1, now)).toMatchObject({ allowed: false, retryAfterMs: Math.ceil(windowMs / limit) });
        },
      ),
    );
  });

  it('over any span of D ms from a fresh bucket, allowed cost <= limit + limit × D / windowMs', () => {
    fc.assert(
      fc.property(bucketArb, callsArb(60, 5000), (bucket, calls) => {
        const { decisions } = replay(bucket, calls);
        const span = calls.slice(1).reduce((sum, c) => sum + c.dt, 0);
        const allowed = decisions.filter((x) => x.call.mode === 'consume' && x.d.allowed).reduce((sum, x) => sum + x.call.cost, 0);
        expect(allowed * bucket.windowMs).toBeLessThanOrEqual(bucket.limit * bucket.windowMs + bucket.limit * span);
      }),
    );
  });

  it('a refused call is allowed exactly retryAfterMs later (not 1 ms sooner), when nothing else happens', () => {
    fc.assert(
      fc.property(bucketArb, callsArb(60, 5000), fc.integer({ min: 0, max: 50 }), (bucket, calls, rawCost) => {
        const { state, now } = replay(bucket, calls);
        const cost = Math.min(rawCost, bucket.limit);
        const d = consume(state, bucket, cost, now);
        if (d.allowed) return expect(d.retryAfterMs).toBe(0);
        expect(d.retryAfterMs).toBeGreaterThanOrEqual(1);
        expect(consume(state, bucket, cost, now + d.retryAfterMs).allowed).toBe(true);
        expect(consume(state, bucket, cost, now + d.retryAfterMs - 1).allowed).toBe(false);
      }),
    );
  });

  it('remaining is exact: `remaining` more fits at the same instant, one more does not (0 when over the limit)', () => {
    fc.assert(
      fc.property(bucketArb, callsArb(60, 5000), (bucket, calls) => {
        const { state, now } = replay(bucket, calls);
        const { remaining, allowed } = consume(state, bucket, 0, now);
        expect(remaining).toBeGreaterThanOrEqual(0);
        expect(remaining).toBeLessThanOrEqual(bucket.limit);
        // Over the limit (after a charge): nothing fits, not even a cost-0 check.
        if (!allowed) return expect(remaining).toBe(0);
        const taken = gcraStep(state, bucket, remaining, now, 'consume');
        expect(taken.decision.allowed).toBe(true);
        expect(consume(taken.next ?? state, bucket, 1, now).allowed).toBe(false);
      }),
    );
  });

  it('resetAt is when the bucket is full again: the whole limit fits then, not 1 ms sooner', () => {
    fc.assert(
      fc.property(bucketArb, callsArb(60, 5000), (bucket, calls) => {
        const { state, now } = replay(bucket, calls);
        const { resetAt } = consume(state, bucket, 0, now);
        expect(resetAt).toBeGreaterThanOrEqual(now);
        expect(consume(state, bucket, bucket.limit, resetAt)).toMatchObject({ allowed: true, remaining: 0 });
        if (resetAt > now) expect(consume(state, bucket, bucket.limit, resetAt - 1).allowed).toBe(false);
      }),
    );
  });

  it('after a charge, cost-0 checks are refused exactly while the bucket is over its limit', () => {
    fc.assert(
      fc.property(bucketArb, callsArb(60, 5000), fc.integer({ min: 0, max: 500 }), (bucket, calls, charged) => {
        const { state, now } = replay(bucket, calls);
        const step = gcraStep(state, bucket, charged, now, 'charge');
        const after = step.next ?? state;
        const check = consume(after, bucket, 0, now);
        expect(check.allowed).toBe(step.decision.allowed);
        if (!check.allowed) {
          expect(check.retryAfterMs).toBe(step.decision.retryAfterMs);
          expect(consume(after, bucket, 0, now + check.retryAfterMs - 1).allowed).toBe(false);
          expect(consume(after, bucket, 0, now + check.retryAfterMs).allowed).toBe(true);
        }
      }),
    );
  });

  it('caps the debt a charge leaves (untrusted token counts): 9e15 tokens on a 1000/min bucket refuse for one window, repeated ones for at most 24 h, with valid dates', () => {
    const bucket = { key: 'tpm', limit: 1000, windowMs: 60_000 };
    const charged = gcraStep(undefined, bucket, 9e15, T0, 'charge');
    // One report costs one window (issue 16 review): the bucket ends one window over its limit.
    expect(charged.decision).toMatchObject({ allowed: false, retryAfterMs: 60_000, resetAt: T0 + 120_000, charged: 2000 });
    expect(consume(charged.next, bucket, 0, T0 + 59_999).allowed).toBe(false);
    expect(consume(charged.next, bucket, 0, T0 + 60_000).allowed).toBe(true);
    // Many absurd reports add up, but never past the 24 h ceiling.
    let state = charged.next;
    for (let i = 0; i < 2000; i++) state = gcraStep(state, bucket, 9e15, T0, 'charge').next;
    const check = consume(state, bucket, 0, T0 + 1);
    expect(check).toMatchObject({ allowed: false, retryAfterMs: MAX_DEBT_MS - 1 });
    expect(new Date(check.resetAt).toISOString()).toMatch(/^2026-11-2/);
    expect(consume(state, bucket, 0, T0 + MAX_DEBT_MS).allowed).toBe(true);
    // A level stored above the ceiling (before it existed) is lowered to it.
    expect(consume({ level: 5.4e20, updatedAt: T0, windowMs: 60_000 }, bucket, 0, T0).retryAfterMs).toBe(MAX_DEBT_MS);
  });

  it('property: one charge, whatever its cost, delays the next cost-0 check by at most one window more than before it; up to that it is charged in full', () => {
    fc.assert(
      fc.property(
        bucketArb,
        callsArb(60, 5000),
        fc.oneof(fc.integer({ min: 0, max: 200 }), fc.double({ min: 0, max: 1e300, noNaN: true })),
        (bucket, calls, cost) => {
          const { state, now } = replay(bucket, calls);
          const before = consume(state, bucket, 0, now).retryAfterMs;
          const step = gcraStep(state, bucket, cost, now, 'charge');
          const after = consume(step.next ?? state, bucket, 0, now).retryAfterMs;
          expect(after).toBeLessThanOrEqual(before + bucket.windowMs);
          expect(step.decision.charged).toBeLessThanOrEqual(Math.ceil(cost));
          // A cost that keeps the bucket within one window of debt is charged whole.
          if (Number.isInteger(cost) && after < before + bucket.windowMs && after < MAX_DEBT_MS) expect(step.decision.charged).toBe(cost);
        },
      ),
    );
  });

  it('property: whatever the costs (up to 1e300) and mode, resetAt and retryAfterMs stay finite and within windowMs + 24 h', () => {
    fc.assert(
      fc.property(
        fc.record({ key: fc.constant('k'), limit: fc.integer({ min: 1, max: 10_000_000 }), windowMs: fc.constantFrom(60_000, 86_400_000) }),
        fc.array(
          fc.record({
            dt: fc.integer({ min: 0, max: 10_000_000 }),
            cost: fc.oneof(fc.integer({ min: 0, max: 1000 }), fc.double({ min: 0, max: 1e300, noNaN: true })),
            mode: fc.constantFrom<GcraMode[]>('consume', 'charge'),
          }),
          { maxLength: 20 },
        ),
        (bucket, calls) => {
          for (const { d } of replay(bucket, calls).decisions) {
            expect(Number.isFinite(d.resetAt) && Number.isFinite(d.retryAfterMs) && Number.isFinite(d.remaining)).toBe(true);
            expect(d.retryAfterMs).toBeLessThanOrEqual(bucket.windowMs + MAX_DEBT_MS);
            expect(() => new Date(d.resetAt).toISOString()).not.toThrow();
          }
        },
      ),
    );
  });
});
