import { GatewayError } from '../common/gateway-error';
import { parseTime, parseUsageQuery, UsageQuery } from './usage-query';

function ok(raw: Record<string, unknown>): UsageQuery {
  const q = parseUsageQuery(raw);
  if (q instanceof GatewayError) throw new Error(`unexpected error: ${q.message}`);
  return q;
}

function problem(raw: Record<string, unknown>): GatewayError {
  const q = parseUsageQuery(raw);
  if (!(q instanceof GatewayError)) throw new Error('expected a validation error');
  expect(q.code).toBe('invalid_request');
  return q;
}

describe('parseUsageQuery', () => {
  it('accepts no parameters at all: totals over everything', () => {
    expect(ok({})).toEqual({});
  });

  it('reads every parameter', () => {
    expect(ok({ tenant: 'team-a', key: 'key_01', since: '2025-01-01', until: '1738368000000', group_by: 'day' })).toEqual({
      tenant: 'team-a',
      keyId: 'key_01',
      since: Date.UTC(2025, 0, 1),
      until: 1738368000000,
      groupBy: 'day',
    });
    for (const g of ['tenant', 'key', 'model', 'day']) expect(ok({ group_by: g }).groupBy).toBe(g);
  });

  it('rejects a bad group_by, naming the choices', () => {
    const e = problem({ group_by: 'week' });
    expect(e.message).toBe("Query parameter 'group_by' must be one of tenant, key, model, pool, day, got 'week'");
    expect(e.details.param).toBe('group_by');
  });

  it('rejects bad dates with a message that says what is accepted', () => {
    for (const bad of ['yesterday', '2025-02-30', '2025-13-01', '2025-01-01T24:00:00Z', '01/02/2025', '-5', '1.5', '2025-01-01T10:00:00+25:00']) {
      const e = problem({ since: bad });
      expect(e.message).toMatch(/^Query parameter 'since' must be an ISO-8601 date or date-time .* or epoch milliseconds, got '/);
    }
    expect(problem({ until: 'soon' }).details.param).toBe('until');
  });

  it('rejects since at or after until', () => {
    expect(problem({ since: '2025-02-01', until: '2025-01-01' }).message).toMatch(/'since' must be before 'until'/);
    expect(problem({ since: '1000', until: '1000' }).details.param).toBe('since');
  });

  it('rejects unknown, repeated and empty parameters, and malformed filters', () => {
    expect(problem({ groupby: 'day' }).message).toBe("Unknown query parameter 'groupby' (known: tenant, key, since, until, group_by)");
    expect(problem({ tenant: ['a', 'b'] }).message).toBe("Query parameter 'tenant' must be given once");
    expect(problem({ tenant: '' }).message).toBe("Query parameter 'tenant' must not be empty");
    expect(problem({ tenant: 'no spaces please' }).details.param).toBe('tenant');
    expect(problem({ key: 'x'.repeat(65) }).details.param).toBe('key');
  });

  it('never echoes more than a short, printable prefix of a bad value', () => {
    const e = problem({ group_by: `${'y'.repeat(500)}\u0000` });
    expect(e.message.length).toBeLessThan(200);
    expect(e.message).not.toContain('\u0000');
  });
});

describe('parseTime', () => {
  it('reads ISO-8601 dates and date-times; without an offset they are UTC', () => {
    expect(parseTime('2025-01-31')).toBe(Date.UTC(2025, 0, 31));
    expect(parseTime('2025-01-31T12:30')).toBe(Date.UTC(2025, 0, 31, 12, 30));
    expect(parseTime('2025-01-31T12:30:15Z')).toBe(Date.UTC(2025, 0, 31, 12, 30, 15));
    expect(parseTime('2025-01-31T12:30:15.25Z')).toBe(Date.UTC(2025, 0, 31, 12, 30, 15, 250));
    expect(parseTime('2025-01-31T12:30:15.123456789Z')).toBe(Date.UTC(2025, 0, 31, 12, 30, 15, 123));
    expect(parseTime('2025-01-31T12:00:00+02:00')).toBe(Date.UTC(2025, 0, 31, 10));
    expect(parseTime('2025-01-31T12:00:00-0530')).toBe(Date.UTC(2025, 0, 31, 17, 30));
    expect(parseTime('2024-02-29')).toBe(Date.UTC(2024, 1, 29));
  });

  it('reads epoch milliseconds', () => {
    expect(parseTime('0')).toBe(0);
    expect(parseTime('1735689600000')).toBe(1735689600000);
  });

  it('refuses dates that do not exist and formats it does not know', () => {
    for (const bad of ['2025-02-29', '2025-04-31', '2025-00-10', '1969-12-31', '2025-1-1', 'Jan 1 2025', '2025-01-01 10:00', '']) {
      expect(parseTime(bad)).toBeUndefined();
    }
  });
});
