import { FakeClock } from '../../test/support/fake-clock';
import { histogramQuantile, HISTORY_BUCKETS, PoolStats, RECENT_ERRORS } from './pool-stats';

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

  const req = (receivedAt: number, correlationId = 'c-1', worker?: string) => ({
    receivedAt,
    correlationId,
    model: 'm',
    tenant: 't',
    worker: worker ? { id: worker } : undefined,
  });

  it('latency percentiles of served requests over the last minute, within a bin of the exact value; errors and cancels not in them', () => {
    const clock = new FakeClock(Date.UTC(2025, 0, 1, 0, 0, 0, 0));
    const stats = new PoolStats(clock);
    expect(stats.latency('p')).toEqual({ p50: null, p90: null, p95: null, p99: null, samples: 0 });
    // 100 served requests that took 1..100 ms.
    for (let ms = 1; ms <= 100; ms++) stats.finished('p', 200, undefined, req(clock.now() - ms));
    stats.finished('p', 504, 'queue_timeout', req(clock.now() - 30_000));
    stats.finished('p', 499, undefined, req(clock.now() - 60_000));
    stats.finished('p', 200); // without the request: counted, no duration
    const l = stats.latency('p');
    expect(l.samples).toBe(100);
    for (const [q, exact] of [
      [l.p50, 50],
      [l.p90, 90],
      [l.p95, 95],
      [l.p99, 99],
    ] as const) {
      expect(q).toBeGreaterThanOrEqual(exact / 1.19);
      expect(q).toBeLessThanOrEqual(exact * 1.19);
    }
    // Six ten-second buckets make the minute: 70 s later they are gone.
    clock.advance(70_000);
    expect(stats.latency('p').samples).toBe(0);
  });

  it('histogramQuantile: null when empty, one sample is its bin, ranks interpolate inside a bin', () => {
    const bins = new Array(80).fill(0);
    expect(histogramQuantile(bins, 0.5)).toBeNull();
    bins[0] = 1; // durations up to 1 ms
    expect(histogramQuantile(bins, 0.99)).toBe(1);
    bins[0] = 0;
    bins[40] = 4; // (2^(39/4), 2^10] ms = (861, 1024]
    expect(histogramQuantile(bins, 0.25)).toBe(Math.round(861.1 + (1024 - 861.1) / 4));
    expect(histogramQuantile(bins, 1)).toBe(1024);
  });

  it('history: thirty ten-second buckets, oldest first, with requests, 5xx and latency; old buckets read as empty', () => {
    const clock = new FakeClock(Date.UTC(2025, 0, 1, 0, 0, 5, 0));
    const stats = new PoolStats(clock);
    stats.finished('p', 200, undefined, req(clock.now() - 100));
    stats.finished('p', 502, undefined, req(clock.now() - 100));
    clock.advance(10_000);
    stats.finished('p', 200, undefined, req(clock.now() - 400));
    const h = stats.history('p');
    expect(h.bucket_secs).toBe(10);
    expect(h.requests).toHaveLength(HISTORY_BUCKETS);
    expect(h.start).toBe(new Date(Date.UTC(2025, 0, 1, 0, 0, 10) - (HISTORY_BUCKETS - 1) * 10_000).toISOString());
    expect(h.requests.slice(-2)).toEqual([2, 1]);
    expect(h.errors.slice(-2)).toEqual([1, 0]);
    expect(h.latency_p50_ms[HISTORY_BUCKETS - 3]).toBeNull();
    // A backend 5xx is served: its duration counts.
    expect(h.latency_p50_ms[HISTORY_BUCKETS - 2]).toBeGreaterThanOrEqual(84);
    expect(h.latency_p50_ms[HISTORY_BUCKETS - 2]).toBeLessThanOrEqual(119);
    expect(h.latency_p95_ms[HISTORY_BUCKETS - 1]).toBeGreaterThanOrEqual(336);
    expect(h.latency_p95_ms[HISTORY_BUCKETS - 1]).toBeLessThanOrEqual(476);
    // Five minutes on, the ring has wrapped: reused buckets start over, and nothing old shows.
    clock.advance(HISTORY_BUCKETS * 10_000);
    stats.finished('p', 200, undefined, req(clock.now() - 1));
    const later = stats.history('p');
    expect(later.requests.reduce((a, b) => a + b, 0)).toBe(1);
    expect(later.requests[HISTORY_BUCKETS - 1]).toBe(1);
    expect(stats.history('nobody').requests.every((n) => n === 0)).toBe(true);
  });

  it('overall: every finished request, of any pool or none, in one minute rate, latency and history', () => {
    const clock = new FakeClock(Date.UTC(2025, 0, 1));
    const stats = new PoolStats(clock);
    stats.finished('a', 200, undefined, req(clock.now() - 10));
    stats.finished('b', 503, 'no_healthy_worker', req(clock.now()));
    stats.finished(undefined, 404, 'model_not_found', req(clock.now()));
    const o = stats.overall();
    expect(o).toMatchObject({ requests_per_min: 3, error_rate: 0.333, latency_ms: { samples: 1 } });
    expect(o.history.requests[HISTORY_BUCKETS - 1]).toBe(3);
    expect(o.history.errors[HISTORY_BUCKETS - 1]).toBe(1);
    // Deleting a pool does not rewrite what the gateway did.
    stats.forget('a');
    expect(stats.overall().requests_per_min).toBe(3);
  });

  it('recent errors: gateway errors and backend 5xx with correlation ids, newest first, bounded; not answers or cancels', () => {
    const clock = new FakeClock(Date.UTC(2025, 0, 1));
    const stats = new PoolStats(clock);
    stats.finished('p', 200, undefined, req(0, 'ok'));
    stats.finished('p', 404, undefined, req(0, 'backend-404'));
    stats.finished('p', 499, undefined, req(0, 'gone'));
    stats.finished('p', 502, undefined, req(0, 'backend-502', 'w-1'));
    clock.advance(1000);
    stats.finished(undefined, 404, 'model_not_found', req(0, 'unrouted'), "Model 'x' not found");
    expect(stats.recentErrors()).toEqual([
      {
        at: '2025-01-01T00:00:01.000Z',
        pool: null,
        status: 404,
        code: 'model_not_found',
        message: "Model 'x' not found",
        correlation_id: 'unrouted',
        model: 'm',
        tenant: 't',
        worker_id: null,
      },
      {
        at: '2025-01-01T00:00:00.000Z',
        pool: 'p',
        status: 502,
        code: null,
        message: null,
        correlation_id: 'backend-502',
        model: 'm',
        tenant: 't',
        worker_id: 'w-1',
      },
    ]);
    for (let i = 0; i < RECENT_ERRORS + 5; i++) stats.finished('p', 503, 'no_healthy_worker', req(0, `e-${i}`));
    const recent = stats.recentErrors();
    expect(recent).toHaveLength(RECENT_ERRORS);
    expect(recent[0].correlation_id).toBe(`e-${RECENT_ERRORS + 4}`);
    expect(recent[RECENT_ERRORS - 1].correlation_id).toBe('e-5');
    // Long client-given strings are clipped.
    stats.finished('p', 500, 'internal_error', { ...req(0), model: 'x'.repeat(500) });
    expect(stats.recentErrors()[0].model).toHaveLength(201);
  });
});
