import { FakeClock } from '../../test/support/fake-clock';
import { NEVER, TenantTurns } from './tenant-turns';

const none = () => false;

describe('TenantTurns', () => {
  it("remembers each tenant's last turn; ties in the same millisecond keep their order", () => {
    const clock = new FakeClock();
    const turns = new TenantTurns();
    expect(turns.at('a')).toBe(NEVER);
    turns.served('a', clock.now(), none);
    turns.served('b', clock.now(), none);
    expect(turns.at('a')).toBe(turns.at('b'));
    expect(turns.seq('a')).toBeLessThan(turns.seq('b'));
    clock.advance(10);
    turns.served('a', clock.now(), none);
    expect(turns.at('a')).toBe(clock.now());
    expect(turns.seq('a')).toBeGreaterThan(turns.seq('b'));
  });

  it('never puts a later turn before an earlier one when the clock steps back', () => {
    const turns = new TenantTurns();
    turns.served('a', 1_000, none);
    turns.served('b', 400, none); // the wall clock stepped back 600 ms
    expect(turns.at('b')).toBeGreaterThanOrEqual(turns.at('a'));
  });

  it("a tenant's turn is its latest at any replica: the others' published turns count once told", () => {
    const clock = new FakeClock();
    const turns = new TenantTurns();
    turns.served('a', clock.now() - 5_000, none);
    turns.setRemote(
      new Map([
        ['a', clock.now() - 100],
        ['b', clock.now() - 200],
      ]),
    );
    expect(turns.at('a')).toBe(clock.now() - 100);
    expect(turns.at('b')).toBe(clock.now() - 200);
    turns.setRemote(new Map());
    expect(turns.at('a')).toBe(clock.now() - 5_000);
    expect(turns.at('b')).toBe(NEVER);
  });

  it('publishes its own most recent turns as ms ago (never the ones it was told)', () => {
    const clock = new FakeClock();
    const turns = new TenantTurns();
    for (const t of ['a', 'b', 'c']) {
      turns.served(t, clock.now(), none);
      clock.advance(100);
    }
    turns.setRemote(new Map([['remote-only', clock.now()]]));
    expect(turns.recent(clock.now(), 2)).toEqual({ b: 200, c: 100 });
    expect(turns.recent(clock.now(), 10)).toEqual({ a: 300, b: 200, c: 100 });
  });

  it('forgets idle tenants, least recently served first, past its bound', () => {
    const turns = new TenantTurns();
    for (let i = 0; i <= 4096; i++) turns.served(`t${i}`, i, (t) => t !== 't0');
    expect(turns.at('t0')).toBe(0); // still waiting: kept
    expect(turns.at('t1')).toBe(NEVER);
    expect(turns.at('t4096')).toBe(4096);
  });
});
