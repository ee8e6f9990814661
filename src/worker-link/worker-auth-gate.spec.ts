import { FailedAuthLimiter } from '../auth/failed-auth-limiter';
import { FakeClock } from '../../test/support/fake-clock';
import { WorkerAuthGate } from './worker-auth-gate';

describe('WorkerAuthGate', () => {
  const config = { maxFailures: 3, windowMs: 60_000, blockMs: 60_000, trustedProxies: [] };

  it('counts checks still in flight toward the limit, so parallel attempts cannot all run', () => {
    const limiter = new FailedAuthLimiter(config, new FakeClock());
    const gate = new WorkerAuthGate(limiter, 3);
    const admitted = Array.from({ length: 40 }, () => gate.tryBegin('k')).filter(Boolean).length;
    expect(admitted).toBe(3);
    expect(gate.tryBegin('other')).toBe(true); // per key
    limiter.stop();
  });

  it('adds recorded failures to checks in flight, and frees a place when a check succeeds', () => {
    const limiter = new FailedAuthLimiter(config, new FakeClock());
    const gate = new WorkerAuthGate(limiter, 3);
    limiter.recordFailure('k');
    expect(gate.tryBegin('k')).toBe(true);
    expect(gate.tryBegin('k')).toBe(true);
    expect(gate.tryBegin('k')).toBe(false);
    gate.end('k'); // a success: no failure recorded
    expect(gate.tryBegin('k')).toBe(true);
    gate.end('k');
    limiter.recordFailure('k'); // a failure, recorded as its check ends
    gate.end('k');
    limiter.recordFailure('k');
    expect(limiter.isBlocked('k')).toBe(true);
    expect(gate.tryBegin('k')).toBe(false);
    expect(gate.running('k')).toBe(0);
    limiter.stop();
  });
});
