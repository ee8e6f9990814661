import { errorHeaders } from './error-dialect';
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
