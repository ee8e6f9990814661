import { agedLevel, HEADS_PER_LEVEL, QueueOrder, Queueable } from './queue-order';
import { TenantTurns } from './tenant-turns';

interface Item extends Queueable {
  id: string;
}
let seq = 0;
const item = (targetModel: string, receivedAt: number, opts: { provider?: string; tenant?: string; priority?: number } = {}): Item => ({
  id: `i${++seq}`,
  targetModel,
  receivedAt,
  queueProvider: opts.provider ?? 'p',
  tenant: opts.tenant ?? 't',
  priority: opts.priority ?? 1,
});
const serving = (...models: string[]) => ({ wildcard: false, models: new Set(models) });
const anyModel = { wildcard: true, models: new Set<string>() };
const all = () => true;

function drain(q: QueueOrder<Item>, now = 0): string[] {
  const out: string[] = [];
  for (let it = q.takeFor(anyModel, all, now); it; it = q.takeFor(anyModel, all, now)) out.push(it.id);
  return out;
}

describe('QueueOrder', () => {
  it('bounds each provider, and each tenant to its own share', () => {
    const q = new QueueOrder<Item>();
    expect(q.admit(item('m', 1, { provider: 'a' }), 2)).toBe('admitted');
    expect(q.admit(item('n', 2, { provider: 'a' }), 2)).toBe('admitted');
    expect(q.admit(item('m', 3, { provider: 'a' }), 2)).toBe('provider_full');
    expect(q.admit(item('m', 4, { provider: 'b', tenant: 'greedy' }), 10, 1)).toBe('admitted');
    expect(q.admit(item('m', 5, { provider: 'b', tenant: 'greedy' }), 10, 1)).toBe('tenant_full');
    expect(q.admit(item('m', 6, { provider: 'b', tenant: 'modest' }), 10, 1)).toBe('admitted');
    expect([q.depth('a'), q.depth('b'), q.tenantDepth('greedy'), q.totalDepth()]).toEqual([2, 2, 1, 4]);
  });

  it('hands a worker the oldest request for any of its models, skipping models it does not serve', () => {
    const q = new QueueOrder<Item>();
    const [x1, y2, y3, z0] = [item('x', 1), item('y', 2), item('y', 3), item('z', 0)];
    [x1, y2, y3, z0].forEach((i) => q.admit(i, 10));
    expect(q.takeFor(serving('y', 'x'), all, 0)).toBe(x1);
    expect(q.takeFor(serving('y'), all, 0)).toBe(y2);
    expect(q.takeFor(anyModel, all, 0)).toBe(z0);
    expect(q.takeFor(serving('nothing'), all, 0)).toBeUndefined();
    expect(q.totalDepth()).toBe(1);
  });

  it('skips requests the worker may not take (capabilities, pin) without losing their place', () => {
    const q = new QueueOrder<Item>();
    const [vision, plain] = [item('m', 1), item('m', 2)];
    q.admit(vision, 10);
    q.admit(plain, 10);
    expect(q.takeFor(serving('m'), (r) => r !== vision, 0)).toBe(plain);
    expect(q.takeFor(serving('m'), all, 0)).toBe(vision);
  });

  it('serves higher priorities first, and FIFO within a priority and tenant', () => {
    const q = new QueueOrder<Item>();
    const low = item('m', 1, { priority: 2 });
    const normal1 = item('m', 2, { priority: 1 });
    const high = item('m', 3, { priority: 0 });
    const normal2 = item('m', 4, { priority: 1 });
    [low, normal1, high, normal2].forEach((i) => q.admit(i, 10));
    expect(drain(q)).toEqual([high.id, normal1.id, normal2.id, low.id]);
  });

  it('takes turns between tenants within a priority: a burst cannot starve a later tenant', () => {
    const q = new QueueOrder<Item>();
    const burst = Array.from({ length: 100 }, (_, i) => item('m', i, { tenant: 'a' }));
    burst.forEach((i) => q.admit(i, 1000));
    const b = [item('m', 200, { tenant: 'b' }), item('m', 201, { tenant: 'b' })];
    b.forEach((i) => q.admit(i, 1000));
    const order = drain(q);
    expect(order.indexOf(b[0].id)).toBeLessThan(3);
    expect(order.indexOf(b[1].id)).toBeLessThan(5);
    expect(order.filter((id) => burst.some((x) => x.id === id))).toEqual(burst.map((x) => x.id)); // a's own order kept
  });

  it('promotes a waiting request one level per aging period, so low never starves', () => {
    const q = new QueueOrder<Item>(10_000);
    const low = item('m', 0, { priority: 2 });
    q.admit(low, 10);
    const normals = [item('m', 5_000), item('m', 6_000)];
    normals.forEach((i) => q.admit(i, 10));
    expect(q.takeFor(anyModel, all, 9_999)).toBe(normals[0]); // still low
    expect(q.takeFor(anyModel, all, 10_000)).toBe(low); // aged to normal, and it arrived first
    const lateLow = item('m', 20_000, { priority: 2 });
    const high = item('m', 30_000, { priority: 0 });
    q.admit(lateLow, 10);
    q.admit(high, 10);
    // At 40 s everything has aged to high: arrival order decides, the late low before the high.
    expect(drain(q, 40_000)).toEqual([normals[1].id, lateLow.id, high.id]);
  });

  it('puts requeued requests back by arrival, ahead of newer ones, past the bound', () => {
    const q = new QueueOrder<Item>();
    const newer = item('m', 50);
    q.admit(newer, 1);
    const [first, second] = [item('m', 10), item('m', 20)];
    q.requeue(second);
    q.requeue(first);
    expect(q.depth('p')).toBe(3);
    expect(drain(q)).toEqual([first.id, second.id, newer.id]);
  });

  it('removes and discards by provider, oldest first', () => {
    const q = new QueueOrder<Item>();
    const [a1, b2, a3] = [item('m', 1, { provider: 'a' }), item('n', 2, { provider: 'b' }), item('o', 3, { provider: 'a', priority: 0 })];
    [a3, b2, a1].forEach((i) => q.requeue(i));
    expect(q.remove(b2)).toBe(true);
    expect(q.remove(b2)).toBe(false);
    expect(q.discard('a')).toEqual([a1, a3]);
    expect(q.totalDepth()).toBe(0);
  });
});

describe('QueueOrder tenant turns', () => {
  it("a tenant that keeps one request queued at a time does not take every slot from a tenant's backlog", () => {
    const q = new QueueOrder<Item>();
    for (let i = 0; i < 10; i++) q.admit(item('m', i, { tenant: 'a' }), 100);
    const served: string[] = [];
    let t = 100;
    for (let round = 0; round < 10; round++) {
      q.admit(item('m', t++, { tenant: 'b' }), 100); // b's next request arrives as soon as its last was taken
      served.push(q.takeFor(anyModel, all, 0)!.tenant);
    }
    // Least recently served goes next: the two tenants alternate instead of b winning every time.
    expect(served).toEqual(['a', 'b', 'a', 'b', 'a', 'b', 'a', 'b', 'a', 'b']);
  });

  describe('positions', () => {
    it("ranks each provider's line in the order its workers take the requests: priority, tenant rounds (across models), age", () => {
      const q = new QueueOrder<Item>();
      const a1 = item('m', 1, { tenant: 'a' });
      const a2 = item('m', 2, { tenant: 'a' });
      const a3 = item('n', 3, { tenant: 'a' });
      const b4 = item('m', 4, { tenant: 'b' });
      const high = item('m', 5, { tenant: 'c', priority: 0 });
      const other = item('m', 0, { provider: 'q' });
      [a1, a2, a3, b4, high, other].forEach((i) => q.admit(i, 10));
      const ranks = q.positions(0);
      expect([high, a1, b4, a2, a3].map((i) => ranks.get(i))).toEqual([1, 2, 3, 4, 5]);
      expect(ranks.get(other)).toBe(1);
      // The ranks are the order a worker serving both models really takes them in.
      expect(drain(q).filter((id) => id !== other.id)).toEqual([high, a1, b4, a2, a3].map((i) => i.id));
    });

    it('moves a request up as the requests ahead of it leave, and counts aging', () => {
      const q = new QueueOrder<Item>(10_000);
      const low = item('m', 0, { priority: 2, tenant: 'x' });
      const normal = item('m', 5_000, { tenant: 'y' });
      [low, normal].forEach((i) => q.admit(i, 10));
      expect(q.positions(6_000).get(low)).toBe(2);
      expect(q.positions(10_000).get(low)).toBe(1); // aged to normal, and older
      q.takeFor(anyModel, all, 10_000);
      expect(q.positions(10_000).get(normal)).toBe(1);
      expect(q.positions(10_000).has(low)).toBe(false);
    });
  });
});

describe('QueueOrder in a cluster', () => {
  it('one aging rule: a level per period waited, never above high', () => {
    expect([agedLevel(2, 999, 1_000), agedLevel(2, 1_000, 1_000), agedLevel(2, 5_000, 1_000), agedLevel(0, 5_000, 1_000), agedLevel(2, 5_000, 0)]).toEqual([
      2, 1, 0, 0, 2,
    ]);
  });

  it("a tenant served lately at another replica waits for the others' turns here too", () => {
    const turns = new TenantTurns();
    const q = new QueueOrder<Item>(0, () => undefined, turns);
    const [x, y] = [item('m', 1, { tenant: 'x' }), item('m', 2, { tenant: 'y' })];
    [x, y].forEach((i) => q.admit(i, 10));
    turns.setRemote(new Map([['x', 50]]));
    expect(q.takeFor(anyModel, all, 100)).toBe(y);
    expect(q.takeFor(anyModel, all, 100)).toBe(x);
  });

  it("publishes each waiting tenant's oldest request per model and level, as ms waited, the first in its order", () => {
    const q = new QueueOrder<Item>();
    [
      item('m', 10, { tenant: 'a' }),
      item('m', 5, { tenant: 'a' }),
      item('m', 20, { tenant: 'b' }),
      item('m', 30, { tenant: 'c', priority: 2 }),
      item('n', 0),
    ].forEach((i) => q.admit(i, 100));
    expect(q.heads(100)).toEqual({
      m: [
        [],
        [
          [95, 'a'],
          [80, 'b'],
        ],
        [[70, 'c']],
      ],
      n: [[], [[100, 't']], []],
    });
    const many = new QueueOrder<Item>();
    for (let i = 0; i < 20; i++) many.admit(item('m', i, { tenant: `t${i}` }), 100);
    expect(many.heads(100).m[1].map(([, tenant]) => tenant)).toEqual(Array.from({ length: HEADS_PER_LEVEL }, (_, i) => `t${i}`));
  });
});
