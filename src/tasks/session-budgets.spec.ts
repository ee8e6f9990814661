import { budgetLimits, InMemorySessionBudgets, sessionKey } from './session-budgets';

describe('session budgets', () => {
  it("limits are what the request asks, never above the tenant's maximum (0 = none)", () => {
    expect(budgetLimits(undefined, {})).toEqual({});
    expect(budgetLimits({ tokens: 500, timeSecs: 1.5 }, {})).toEqual({ tokens: 500, timeMs: 1500 });
    expect(budgetLimits({ tokens: 500 }, { sessionTokens: 100, sessionTimeSecs: 60 })).toEqual({ tokens: 100, timeMs: 60_000 });
    expect(budgetLimits({ tokens: 50, timeSecs: 10 }, { sessionTokens: 100, sessionTimeSecs: 60 })).toEqual({ tokens: 50, timeMs: 10_000 });
    expect(budgetLimits({ tokens: 50 }, { sessionTokens: 0 })).toEqual({ tokens: 50 });
  });

  it('keys sessions by tenant, and a task without a session by its own id', () => {
    expect(sessionKey('a', 's', 't1')).toBe(sessionKey('a', 's', 't2'));
    expect(sessionKey('a', 's', 't1')).not.toBe(sessionKey('b', 's', 't1'));
    expect(sessionKey('a', undefined, 's')).not.toBe(sessionKey('a', 's', 'x'));
  });

  it('adds tokens (corrections included, never below 0) and time, and forgets sessions idle past the TTL', () => {
    const store = new InMemorySessionBudgets(1000);
    store.addTokens('s1', 10, 0);
    store.addTokens('s1', -4, 100);
    store.addTime('s1', 250, 100);
    store.addTokens('s2', 3, 600);
    expect(store.usage('s1')).toMatchObject({ tokens: 6, timeMs: 250 });
    store.addTokens('s0', -5, 700);
    expect(store.usage('s0').tokens).toBe(0);
    store.prune(1100);
    expect(store.usage('s1')).toMatchObject({ tokens: 0, timeMs: 0 });
    expect(store.usage('s2').tokens).toBe(3);
    store.prune(1700);
    expect(store.usage('s0').tokens).toBe(0);
    expect(store.usage('s2').tokens).toBe(0);
  });

  it('charging every token of a stream does not re-insert its session each time, and pruning still keeps what is in use', () => {
    const store = new InMemorySessionBudgets(16_000); // sessions move to the back at most once a second
    store.addTokens('idle', 1, 0);
    const deletes = jest.spyOn(Map.prototype, 'delete');
    let reinsertions: number;
    try {
      for (let t = 0; t < 10_000; t++) store.addTokens('busy', 1, t); // a token a millisecond for 10 s
      reinsertions = deletes.mock.calls.length;
    } finally {
      deletes.mockRestore();
    }
    expect(reinsertions).toBeLessThanOrEqual(10);
    expect(store.usage('busy').tokens).toBe(10_000);
    // 'busy' was last used at 9999 (and moved at 9000 at the latest): it outlives 'idle', which goes at its TTL.
    store.prune(16_000);
    expect(store.usage('idle').tokens).toBe(0);
    expect(store.usage('busy').tokens).toBe(10_000);
    store.prune(9_999 + 16_000);
    expect(store.usage('busy').tokens).toBe(0);
  });
});
