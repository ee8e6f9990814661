import { Backoff } from './backoff';

describe('reconnect backoff', () => {
  it('doubles from the minimum up to the maximum', () => {
    const b = new Backoff({ minMs: 1000, maxMs: 30_000, random: () => 0 });
    expect([1, 2, 3, 4, 5, 6, 7].map(() => b.next())).toEqual([1000, 2000, 4000, 8000, 16000, 30000, 30000]);
  });

  it('adds up to 20 % jitter so a fleet does not reconnect in lockstep', () => {
    const top = new Backoff({ minMs: 1000, maxMs: 30_000, random: () => 0.999999 });
    expect(top.next()).toBe(1200);
    const mid = new Backoff({ minMs: 1000, maxMs: 30_000, random: () => 0.5 });
    expect(mid.next()).toBe(1100);
  });

  it('starts over after a reset (a stable session)', () => {
    const b = new Backoff({ minMs: 50, maxMs: 400, random: () => 0 });
    b.next();
    b.next();
    b.next();
    b.reset();
    expect(b.next()).toBe(50);
  });
});
