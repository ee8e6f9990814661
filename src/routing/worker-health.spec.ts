import { HealthTracker } from './worker-health';

const policy = { ejectAfterFailures: 3, cooldownMs: 30_000, maxCooldownMs: 300_000 };

describe('HealthTracker (passive outlier detection)', () => {
  it('ejects after N failures in a row, for the cooldown', () => {
    const t = new HealthTracker(policy);
    const h = t.attach('p', 'w', 0);
    expect(t.recordFailure(h, 0)).toBeUndefined();
    expect(t.recordFailure(h, 0)).toBeUndefined();
    expect(t.recordFailure(h, 1000)).toEqual({ ejectedForMs: 30_000 });
    expect(h.isEjected(30_999)).toBe(true);
    expect(h.isEjected(31_000)).toBe(false);
  });

  it('a success in between resets the count', () => {
    const t = new HealthTracker(policy);
    const h = t.attach('p', 'w', 0);
    t.recordFailure(h, 0);
    t.recordFailure(h, 0);
    t.recordSuccess(h);
    expect(t.recordFailure(h, 0)).toBeUndefined();
    expect(h.isEjected(0)).toBe(false);
  });

  it('doubles the cooldown while the worker keeps failing, up to the maximum, and a success resets it', () => {
    const t = new HealthTracker(policy);
    const h = t.attach('p', 'w', 0);
    let now = 0;
    const lengths: number[] = [];
    for (let i = 0; i < 3; i++) t.recordFailure(h, now);
    lengths.push(h.ejectedUntil - now);
    for (let round = 0; round < 5; round++) {
      now = h.ejectedUntil; // back in rotation; its next request fails again
      lengths.push(t.recordFailure(h, now)!.ejectedForMs);
    }
    expect(lengths).toEqual([30_000, 60_000, 120_000, 240_000, 300_000, 300_000]);
    t.recordSuccess(h); // e.g. a request it had before the ejection completes
    now = h.ejectedUntil;
    for (let i = 0; i < 3; i++) t.recordFailure(h, now);
    expect(h.ejectedUntil - now).toBe(30_000);
  });

  it('failures while ejected do not extend the ejection', () => {
    const t = new HealthTracker(policy);
    const h = t.attach('p', 'w', 0);
    for (let i = 0; i < 3; i++) t.recordFailure(h, 0);
    expect(t.recordFailure(h, 10)).toBeUndefined();
    expect(h.ejectedUntil).toBe(30_000);
  });

  it('a reconnect under the same name keeps the record; a namesake connected at the same time gets its own', () => {
    const t = new HealthTracker(policy);
    const first = t.attach('p', 'gpu-1', 0);
    const namesake = t.attach('p', 'gpu-1', 0);
    expect(namesake).not.toBe(first);
    expect(t.attach('other', 'gpu-1', 0)).not.toBe(first); // names are per provider
    for (let i = 0; i < 3; i++) t.recordFailure(first, 0);
    t.detach(first, 5);
    const again = t.attach('p', 'gpu-1', 10);
    expect(again).toBe(first);
    expect(again.isEjected(10)).toBe(true);
  });

  it('keeps a moving average of time to first byte, starting from 0 (no data), so one slow sample moves it by a third', () => {
    const t = new HealthTracker(policy);
    const h = t.attach('p', 'w', 0);
    expect(h.latencyMs).toBe(0);
    t.recordLatency(h, 100);
    expect(h.latencyMs).toBeCloseTo(30);
    t.recordLatency(h, 100);
    expect(h.latencyMs).toBeCloseTo(51);
    for (let i = 0; i < 20; i++) t.recordLatency(h, 100);
    expect(h.latencyMs).toBeGreaterThan(99);
  });
});
