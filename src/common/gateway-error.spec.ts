import { errorBody, errorHeaders } from './error-dialect';
import { Errors, MAX_RETRY_AFTER_MS, safeIsoTime } from './gateway-error';

describe('errors never throw on bad numbers (issue 16, H1)', () => {
  it('builds a rate-limit error whose reset time is past the largest Date, clamping it', () => {
    const e = Errors.rateLimitExceeded('tokens', { limit: 1000, remaining: 0, resetAt: 5.4e20, retryAfterMs: 5.4e20 });
    expect(e.details.fields?.reset_at).toBe('+275760-09-13T00:00:00.000Z');
    expect(e.details.retryAfterMs).toBe(MAX_RETRY_AFTER_MS);
    expect(safeIsoTime(Number.NaN)).toBe('1970-01-01T00:00:00.000Z');
    expect(safeIsoTime(-Infinity)).toBe('1970-01-01T00:00:00.000Z');
  });

  it('writes Retry-After and X-Backoff-Ms as bounded whole numbers whatever the hint', () => {
    expect(errorHeaders(Errors.noHealthyWorker('m', Infinity))).toEqual({
      'retry-after': String(MAX_RETRY_AFTER_MS / 1000),
      'x-backoff-ms': String(MAX_RETRY_AFTER_MS),
    });
    expect(errorHeaders(Errors.noHealthyWorker('m', Number.NaN))['retry-after']).toBe(String(MAX_RETRY_AFTER_MS / 1000));
    expect(errorHeaders(Errors.noHealthyWorker('m', 1500))).toEqual({ 'retry-after': '2', 'x-backoff-ms': '1500' });
  });
});

describe("backpressure bodies carry the model-runner seed's names beside ours (issue 22)", () => {
  it('queue_full: queueDepth and avgWaitMs beside queue_depth and avg_wait_ms, and a message naming both', () => {
    const body = errorBody('openai', Errors.queueFull(1500, 16, 2000)).error as Record<string, unknown>;
    expect(body).toMatchObject({ code: 'queue_full', queue_depth: 16, avg_wait_ms: 2000, queueDepth: 16, avgWaitMs: 2000 });
    expect(body.message).toBe('Service temporarily at capacity: queue depth 16, average wait 2000 ms, please retry');
    expect(Errors.queueFull(1, 3, 10.4, true).message).toBe("Your tenant's share of the queue is full: queue depth 3, average wait 10 ms, please retry");
  });

  it('rate_limit_exceeded: resetAt in epoch seconds beside reset_at, and a message naming the tenant and the limit', () => {
    const e = Errors.rateLimitExceeded('requests', { limit: 100, remaining: 0, resetAt: 1_745_880_059_500, retryAfterMs: 30_000 }, 'community-x');
    const body = errorBody('anthropic', e).error as Record<string, unknown>;
    expect(body).toMatchObject({ code: 'rate_limit_exceeded', limit: 100, remaining: 0, resetAt: 1_745_880_060, reset_at: '2025-04-28T22:40:59.500Z' });
    expect(e.message).toBe("Tenant 'community-x' exceeded 100 req/min, please retry");
    expect(Errors.rateLimitExceeded('tokens', { limit: 5000, remaining: 0, resetAt: 0, retryAfterMs: 1 }, 't').message).toBe(
      "Tenant 't' exceeded 5000 tok/min, please retry",
    );
  });
});
