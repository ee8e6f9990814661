import { QueueStats } from './queue-stats';

describe('QueueStats', () => {
  it('advises 1 s before anything has left the queue', () => {
    expect(new QueueStats().retryAfterMs('p', 50, 0)).toBe(1000);
  });

  it('advises the time the queue needs to drain the requests ahead, from its observed rate', () => {
    const s = new QueueStats();
    for (let t = 0; t <= 10_000; t += 500) s.departed('p', 200, t); // 2 per second
    expect(s.retryAfterMs('p', 10, 10_000)).toBe(5000);
    expect(s.retryAfterMs('p', 1000, 10_000)).toBe(60_000); // capped
    expect(s.retryAfterMs('p', 1, 10_000)).toBe(1000); // at least a second
    expect(s.retryAfterMs('other', 10, 10_000)).toBe(1000);
  });

  it('a queue that stopped draining advises longer waits as time passes', () => {
    const s = new QueueStats();
    for (let t = 0; t <= 1000; t += 100) s.departed('p', 0, t);
    expect(s.retryAfterMs('p', 10, 60_000)).toBeGreaterThan(s.retryAfterMs('p', 10, 1000));
  });

  it('reports the average and p95 of recent waits', () => {
    const s = new QueueStats();
    for (let i = 1; i <= 100; i++) s.departed('p', i * 10, i);
    expect(s.avgWaitMs('p')).toBe(505);
    expect(s.p95WaitMs('p')).toBe(950);
  });

  it('averages service time per slot from completions (EWMA), per model with the pool as fallback', () => {
    const s = new QueueStats();
    expect(s.serviceMs('p', 'm')).toBeUndefined();
    s.served('p', 'm', 1000);
    expect(s.serviceMs('p', 'm')).toBe(1000); // available after the first completion
    s.served('p', 'm', 2000);
    expect(s.serviceMs('p', 'm')).toBe(1200); // 1000 + 0.2 × (2000 − 1000)
    expect(s.serviceMs('p', 'other')).toBe(1200); // the pool's, until the model has its own
    s.served('p', 'other', 100);
    expect(s.serviceMs('p', 'other')).toBe(100);
    expect(s.serviceMs('q', 'm')).toBeUndefined();
    s.served('p', 'm', NaN);
    expect(s.serviceMs('p', 'm')).toBe(1200);
  });
});
