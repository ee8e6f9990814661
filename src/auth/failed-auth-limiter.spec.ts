import { FakeClock } from '../../test/support/fake-clock';
import { FailedAuthLimiter } from './failed-auth-limiter';

const config = { maxFailures: 3, windowMs: 60_000, blockMs: 30_000, trustedProxies: ['10.0.0.1'] };

describe('FailedAuthLimiter', () => {
  let clock: FakeClock;
  let limiter: FailedAuthLimiter;
  beforeEach(() => {
    clock = new FakeClock();
    limiter = new FailedAuthLimiter(config, clock);
  });
  afterEach(() => limiter.stop());

  it('blocks a client after maxFailures failures within the window, and only that client', () => {
    for (let i = 0; i < 2; i++) limiter.recordFailure('1.1.1.1');
    expect(limiter.isBlocked('1.1.1.1')).toBe(false);
    limiter.recordFailure('1.1.1.1');
    expect(limiter.isBlocked('1.1.1.1')).toBe(true);
    expect(limiter.isBlocked('2.2.2.2')).toBe(false);
  });

  it('unblocks after the block period and forgets the entry by itself', () => {
    for (let i = 0; i < 3; i++) limiter.recordFailure('1.1.1.1');
    clock.advance(29_999);
    expect(limiter.isBlocked('1.1.1.1')).toBe(true);
    clock.advance(60_001);
    expect(limiter.isBlocked('1.1.1.1')).toBe(false);
    expect(limiter.size()).toBe(0);
  });

  it('does not count failures from an expired window', () => {
    limiter.recordFailure('1.1.1.1');
    limiter.recordFailure('1.1.1.1');
    clock.advance(60_000);
    limiter.recordFailure('1.1.1.1');
    expect(limiter.isBlocked('1.1.1.1')).toBe(false);
  });

  it('keys on the peer address and trusts forwarding headers only from configured proxies', () => {
    expect(limiter.clientKey('::ffff:5.5.5.5', { 'x-forwarded-for': '9.9.9.9' })).toBe('5.5.5.5');
    expect(limiter.clientKey('10.0.0.1', { 'x-forwarded-for': '9.9.9.9, 10.0.0.1' })).toBe('9.9.9.9');
    expect(limiter.clientKey('10.0.0.1', { forwarded: 'for="[2001:db8::1]:4711";proto=https' })).toBe('2001:db8::1');
    expect(limiter.clientKey('10.0.0.1', {})).toBe('10.0.0.1');
  });

  it('prefers Forwarded over X-Forwarded-For from a trusted proxy (issue 16), and ignores both from anyone else', () => {
    const both = { forwarded: 'for=192.0.2.60;proto=https, for=10.0.0.1', 'x-forwarded-for': '9.9.9.9' };
    expect(limiter.clientKey('10.0.0.1', both)).toBe('192.0.2.60');
    expect(limiter.clientKey('10.0.0.1', { forwarded: 'proto=https', 'x-forwarded-for': '9.9.9.9' })).toBe('9.9.9.9');
    expect(limiter.clientKey('5.5.5.5', both)).toBe('5.5.5.5');
  });

  it('scopes keys by provider, so failures for one provider do not block another', () => {
    const a = limiter.scopedKey('1.1.1.1', 'a');
    for (let i = 0; i < 3; i++) limiter.recordFailure(a);
    expect(limiter.isBlocked(a)).toBe(true);
    expect(limiter.isBlocked(limiter.scopedKey('1.1.1.1', 'b'))).toBe(false);
    expect(limiter.isBlocked(limiter.scopedKey('2.2.2.2', 'a'))).toBe(false);
  });
});
