import fc from 'fast-check';
import { DEFAULT_WEIGHTS, effectivePriority, score } from './scoring';

describe('score (smart strategy)', () => {
  it('matches the weighted formula with the default weights', () => {
    // (100-10)*50 + (100-2)*30 + (100-5)*20 = 4500 + 2940 + 1900 = 9340 → 93.4
    expect(score({ priority: 10, pending: 2, latencyMs: 50 }, DEFAULT_WEIGHTS)).toBe(93.4);
  });

  it('clamps priority and pending above 100 and latency above 1000 ms', () => {
    expect(score({ priority: 250, pending: 500, latencyMs: 90_000 }, DEFAULT_WEIGHTS)).toBe(0);
    expect(score({ priority: 100, pending: 100, latencyMs: 1000 }, DEFAULT_WEIGHTS)).toBe(0);
  });

  it('treats no latency data (0 ms) as the best latency', () => {
    expect(score({ priority: 0, pending: 0, latencyMs: 0 }, DEFAULT_WEIGHTS)).toBe(100);
  });

  it('one pending request separates two workers; latency counts in 10 ms steps', () => {
    expect(score({ priority: 50, pending: 0, latencyMs: 9 }, DEFAULT_WEIGHTS)).toBeGreaterThan(
      score({ priority: 50, pending: 1, latencyMs: 0 }, DEFAULT_WEIGHTS),
    );
    expect(score({ priority: 50, pending: 0, latencyMs: 3 }, DEFAULT_WEIGHTS)).toBe(score({ priority: 50, pending: 0, latencyMs: 9.9 }, DEFAULT_WEIGHTS));
  });

  it('prefers the less loaded and the faster worker (US-03)', () => {
    const base = { priority: 50, pending: 0, latencyMs: 0 };
    expect(score({ ...base, pending: 2 }, DEFAULT_WEIGHTS)).toBeGreaterThan(score({ ...base, pending: 10 }, DEFAULT_WEIGHTS));
    expect(score({ ...base, latencyMs: 50 }, DEFAULT_WEIGHTS)).toBeGreaterThan(score({ ...base, latencyMs: 200 }, DEFAULT_WEIGHTS));
  });

  it('follows the configured weights', () => {
    const onlyLatency = { priority: 0, load: 0, latency: 100 };
    expect(score({ priority: 0, pending: 99, latencyMs: 0 }, onlyLatency)).toBe(100);
    expect(score({ priority: 0, pending: 0, latencyMs: 500 }, onlyLatency)).toBe(50);
  });

  it('is always from 0 to 100', () => {
    const weights = fc
      .tuple(fc.integer({ min: 0, max: 100 }), fc.integer({ min: 0, max: 100 }))
      .filter(([a, b]) => a + b <= 100)
      .map(([a, b]) => ({ priority: a, load: b, latency: 100 - a - b }));
    fc.assert(
      fc.property(
        fc.double({ min: -1e9, max: 1e9, noNaN: true }),
        fc.nat(),
        fc.double({ min: 0, max: 1e9, noNaN: true }),
        weights,
        (priority, pending, latencyMs, w) => {
          const s = score({ priority, pending, latencyMs }, w);
          expect(s).toBeGreaterThanOrEqual(0);
          expect(s).toBeLessThanOrEqual(100);
        },
      ),
    );
  });
});

describe('effectivePriority (the provider floor)', () => {
  it('a worker may rank itself lower than its provider, never higher', () => {
    expect(effectivePriority(10, 0)).toBe(10);
    expect(effectivePriority(10, 70)).toBe(70);
    expect(effectivePriority(10, undefined)).toBe(10);
    expect(effectivePriority(0, 3)).toBe(3);
  });

  it('a provider without a configured priority leaves the ranking to its workers (default 50)', () => {
    expect(effectivePriority(null, 0)).toBe(0);
    expect(effectivePriority(null, 1)).toBe(1);
    expect(effectivePriority(undefined, 90)).toBe(90);
    expect(effectivePriority(null, undefined)).toBe(50);
  });
});
