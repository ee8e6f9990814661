import { FakeClock } from '../../test/support/fake-clock';
import type { AuditEntry } from './audit-log';
import { MAX_OPEN_BUCKETS, UnauthenticatedRefusals } from './unauthenticated-refusals';

const refusal = (at: number, operation: AuditEntry['operation'] = 'model-load'): AuditEntry => ({
  at,
  operation,
  modelId: null,
  scope: null,
  target: {},
  workers: [],
  signers: null,
  nonce: null,
  adminIdentity: null,
  outcome: 'refused',
  status: 401,
  errorCode: 'unauthorized',
  error: 'Invalid or missing admin token',
  taskId: null,
});

describe('UnauthenticatedRefusals', () => {
  const start = 10 * 60_000; // on a minute boundary
  let clock: FakeClock;
  let written: AuditEntry[];
  let refusals: UnauthenticatedRefusals;
  beforeEach(() => {
    clock = new FakeClock(start);
    written = [];
    refusals = new UnauthenticatedRefusals(clock, (e) => written.push(e));
  });
  afterEach(() => refusals.stop());

  it('writes one row per address and minute, when the minute is over, saying how many requests it stands for', () => {
    for (let i = 0; i < 500; i++) refusals.add(refusal(clock.now()), '192.0.2.1');
    refusals.add(refusal(clock.now()), '192.0.2.2');
    clock.advance(59_000);
    expect(written).toEqual([]);
    clock.advance(2_000);
    expect(written.map((w) => w.error)).toEqual([
      'Invalid or missing admin token (500 requests from 192.0.2.1 in the minute from 1970-01-01T00:10:00.000Z)',
      'Invalid or missing admin token (1 request from 192.0.2.2 in the minute from 1970-01-01T00:10:00.000Z)',
    ]);
    expect(written[0]).toMatchObject({ at: start, outcome: 'refused', errorCode: 'unauthorized' });
    // The next minute is a row of its own.
    refusals.add(refusal(clock.now()), '192.0.2.1');
    clock.advance(60_000);
    expect(written).toHaveLength(3);
  });

  it('keeps operations apart (the audit log is filtered by operation), and a flush writes what is open', () => {
    refusals.add(refusal(clock.now(), 'model-load'), '192.0.2.1');
    refusals.add(refusal(clock.now(), 'cache-flush'), '192.0.2.1');
    refusals.flush();
    expect(written.map((w) => w.operation)).toEqual(['model-load', 'cache-flush']);
  });

  it('bounds what it holds: past MAX_OPEN_BUCKETS addresses the oldest bucket is written early', () => {
    for (let i = 0; i <= MAX_OPEN_BUCKETS; i++) refusals.add(refusal(clock.now()), `10.0.${i >> 8}.${i & 255}`);
    expect(written).toHaveLength(1);
    expect(written[0].error).toContain('from 10.0.0.0 ');
  });
});
