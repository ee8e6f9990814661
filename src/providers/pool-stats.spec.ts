import { FakeClock } from '../../test/support/fake-clock';
import { PoolStats } from './pool-stats';

describe('PoolStats', () => {
  it('counts the last minute in one-second buckets: old seconds fall out, a reused bucket starts over', () => {
    const clock = new FakeClock(Date.UTC(2025, 0, 1, 0, 0, 0, 500));
    const stats = new PoolStats(clock);
    stats.finished('p', 200);
    stats.finished('p', 503, 'no_healthy_worker');
    expect(stats.rates('p')).toEqual({ requests_per_min: 2, error_rate: 0.5 });

    clock.advance(30_000);
    stats.finished('p', 200);
    expect(stats.rates('p')).toEqual({ requests_per_min: 3, error_rate: 0.333 });

    // 60 s after the first two they are out of the window; the one at +30 s is still in.
    clock.advance(30_000);
    expect(stats.rates('p')).toEqual({ requests_per_min: 1, error_rate: 0 });
    // The bucket of the first second is reused: it does not add the old counts.
    stats.finished('p', 500);
    expect(stats.rates('p')).toEqual({ requests_per_min: 2, error_rate: 0.5 });

    clock.advance(10 * 60_000);
    expect(stats.rates('p')).toEqual({ requests_per_min: 0, error_rate: 0 });
  });

  it('keeps served, cancelled, errors and rejections by code and tokens per pool, and unrouted requests apart', () => {
    const stats = new PoolStats(new FakeClock());
    stats.finished('a', 200);
    stats.finished('a', 404); // a backend 404 is still an answer
    stats.finished('a', 499);
    stats.rejected('a', 'queue_full');
    stats.finished('a', 429, 'queue_full');
    stats.finished('a', 504, 'queue_timeout');
    stats.tokens('a', 10, 4);
    stats.rejected(undefined, 'model_not_found');
    stats.finished(undefined, 404, 'model_not_found');

    const a = stats.of('a');
    expect({ served: a.served, cancelled: a.cancelled, prompt: a.promptTokens, completion: a.completionTokens }).toEqual({
      served: 2,
      cancelled: 1,
      prompt: 10,
      completion: 4,
    });
    expect(Object.fromEntries(a.errorsByCode)).toEqual({ queue_full: 1, queue_timeout: 1 });
    expect(Object.fromEntries(a.rejectedByCode)).toEqual({ queue_full: 1 });
    expect(stats.rates('a')).toEqual({ requests_per_min: 5, error_rate: 0.2 });
    expect(Object.fromEntries(stats.unrouted.rejectedByCode)).toEqual({ model_not_found: 1 });
    expect(stats.of('b').served).toBe(0);

    stats.forget('a');
    expect(stats.of('a').served).toBe(0);
  });
});
