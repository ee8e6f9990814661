import { FakeClock } from '../../test/support/fake-clock';
import { Queueable, QueueOrder } from './queue-order';
import { CLUSTER_ORDER_SLACK_MS, readQueueDepths, RemoteDepths } from './remote-depths';
import { TenantTurns } from './tenant-turns';

const AGING = 1_000;
const worker = (...models: string[]) => ({ wildcard: false, models: new Set(models) });
const req = (receivedAt: number, tenant = 't', priority = 1, targetModel = 'm'): Queueable => ({
  receivedAt,
  targetModel,
  queueProvider: 'p',
  tenant,
  priority,
});

/** A replica's queue and turns, publishing what AdmissionQueue.depths publishes, on its own clock. */
class Replica {
  readonly turns = new TenantTurns();
  readonly queue = new QueueOrder<Queueable>(AGING, () => undefined, this.turns);
  readonly elsewhere = new RemoteDepths(AGING, this.turns);
  constructor(readonly clock: FakeClock) {}
  publish(): unknown {
    const now = this.clock.now();
    // Through JSON, as over the board.
    return JSON.parse(JSON.stringify({ ...this.queue.depths(), heads: this.queue.heads(now), turns: this.turns.recent(now, 256) }));
  }
  hear(from: string, other: Replica): void {
    this.elsewhere.set(from, readQueueDepths(other.publish()), this.clock.now());
  }
  /** Whether `item` here must let another replica's request take a slot of a worker serving `models` first. */
  behind(item: Queueable, ...models: string[]): boolean {
    const now = this.clock.now();
    return this.elsewhere.behind(item, this.elsewhere.rivalsFor(worker(...models), now), now);
  }
}

/** Two replicas whose wall clocks disagree by an hour: only durations cross between them. */
function twoReplicas(): { a: Replica; b: Replica; tick: (ms: number) => void } {
  const a = new Replica(new FakeClock(Date.UTC(2026, 0, 1)));
  const b = new Replica(new FakeClock(Date.UTC(2026, 0, 1) + 3_600_000));
  return { a, b, tick: (ms) => [a, b].forEach((r) => r.clock.advance(ms)) };
}

describe('RemoteDepths: the cluster order across replicas', () => {
  it('ages another replica’s request at the reader: an old low request is ahead of a newer normal one once aged', () => {
    const { a, b, tick } = twoReplicas();
    b.queue.admit(req(b.clock.now(), 't', 2), 10);
    tick(200);
    a.hear('b', b); // published once, when it was queued: no new message is needed for it to age
    const normal = req(a.clock.now() + 700);
    tick(790);
    expect(a.behind(normal, 'm')).toBe(false); // still low (990 ms < the aging period)
    tick(10);
    expect(a.behind(normal, 'm')).toBe(true); // aged to normal, and it arrived 900 ms earlier
    expect(a.behind(normal, 'other-model')).toBe(false); // a worker that cannot serve it is not held
    const high = req(a.clock.now(), 't', 0);
    expect(a.behind(high, 'm')).toBe(false);
  });

  it('within a level, the same tenant: arrival decides, with the slack', () => {
    const { a, b, tick } = twoReplicas();
    b.queue.admit(req(b.clock.now()), 10);
    a.hear('b', b);
    tick(CLUSTER_ORDER_SLACK_MS);
    expect(a.behind(req(a.clock.now()), 'm')).toBe(false); // arrived together, within the slack
    expect(a.behind(req(a.clock.now() + 1), 'm')).toBe(true);
    // A higher level is ahead whatever its arrival; a lower one never is.
    expect(a.behind(req(a.clock.now() - 10, 't', 2), 'm')).toBe(true);
    expect(a.behind(req(a.clock.now() + 10_000, 't', 0), 'm')).toBe(false);
  });

  it('tenants take turns across replicas: a tenant just served at another replica goes after one not served', () => {
    const { a, b, tick } = twoReplicas();
    // B holds two of x's requests and serves the first (x's turn there).
    b.queue.admit(req(b.clock.now(), 'x'), 10);
    b.queue.admit(req(b.clock.now() + 1, 'x'), 10);
    tick(300);
    b.queue.takeFor(worker('m'), () => true, b.clock.now());
    tick(5);
    a.hear('b', b);
    // y's request at A arrived long after x's second: y was never served, so it goes first ...
    const y = req(a.clock.now(), 'y');
    tick(10);
    expect(a.behind(y, 'm')).toBe(false);
    // ... and A's own queue puts y before an older request of x waiting at A.
    const xHere = req(a.clock.now() - 500, 'x');
    a.queue.admit(xHere, 10);
    a.queue.admit(y, 10);
    expect(a.queue.takeFor(worker('m'), () => true, a.clock.now())).toBe(y);
    // y served at A: B's next x request (older, x served 315 ms ago) is now ahead of another y request at A.
    tick(100);
    expect(a.behind(req(a.clock.now(), 'y'), 'm')).toBe(true);
  });

  it('turns within the slack count as the same turn: arrival decides', () => {
    const { a, b, tick } = twoReplicas();
    b.queue.admit(req(b.clock.now(), 'x'), 10);
    b.queue.admit(req(b.clock.now(), 'x'), 10);
    a.queue.admit(req(a.clock.now(), 'y'), 10);
    b.queue.takeFor(worker('m'), () => true, b.clock.now());
    tick(20);
    a.queue.takeFor(worker('m'), () => true, a.clock.now()); // y served 20 ms after x
    tick(100);
    a.hear('b', b);
    expect(a.behind(req(a.clock.now(), 'y'), 'm')).toBe(true); // B's x arrived 120 ms earlier
    expect(a.behind(req(a.clock.now() - 100, 'y'), 'm')).toBe(false); // within 50 ms of it
  });

  it('every other replica’s requests are rivals for a slot, not only those of the worker’s replica', () => {
    // Three replicas: the worker is connected to a (nothing waits there); b and c each hold a request.
    const { a, b, tick } = twoReplicas();
    const c = new Replica(new FakeClock(Date.UTC(2026, 0, 1) - 3_600_000));
    b.queue.admit(req(b.clock.now(), 'x'), 10);
    tick(300);
    c.clock.advance(300);
    const atC = req(c.clock.now(), 'y');
    c.queue.admit(atC, 10);
    c.hear('a', a);
    c.hear('b', b);
    const now = c.clock.now();
    const rivals = c.elsewhere.rivalsFor(worker('m'), now);
    expect(rivals.map((r) => r.key.split('\u0000')[0])).toEqual(['b']);
    expect(c.elsewhere.aheadOf(atC, rivals, now)?.tenant).toBe('x'); // b's request, 300 ms older
    // Held for in vain once (b could not send it to this worker): not a rival of that worker again.
    const inVain = new Map([[rivals[0].key, rivals[0].arrivedAt]]);
    expect(c.elsewhere.rivalsFor(worker('m'), now, inVain)).toEqual([]);
  });

  it('a replica that leaves, or publishes nothing waiting, is out of the order', () => {
    const { a, b } = twoReplicas();
    b.queue.admit(req(b.clock.now() - 1_000, 'x'), 10);
    b.queue.takeFor(worker('m'), () => true, b.clock.now());
    b.queue.admit(req(b.clock.now() - 1_000, 'x'), 10);
    a.hear('b', b);
    expect(a.elsewhere.waiting).toBe(true);
    expect(a.turns.at('x')).toBe(a.clock.now());
    a.elsewhere.set('b', undefined, a.clock.now());
    expect(a.elsewhere.waiting).toBe(false);
    expect(a.behind(req(a.clock.now()), 'm')).toBe(false);
    expect(a.turns.at('x')).toBe(-Infinity);
    a.hear('b', b);
    a.elsewhere.clear();
    expect([a.elsewhere.waiting, a.turns.at('x')]).toEqual([false, -Infinity]);
  });
});

describe('readQueueDepths: what another replica published is untrusted input', () => {
  it('keeps plain bounded figures and drops the rest', () => {
    const read = readQueueDepths({
      providers: { p: 2 },
      tenants: { t: 2 },
      heads: {
        m: [[[10, 'a'], [-1, 'b'], [Number.NaN, 'c'], [1e15, 'd'], [5, 7], [5, ''], 'x', [1, 'e', 2]], 250, null],
        ['__proto__']: [[[1, 'z']]],
        n: 'not levels',
        o: [[], [], [], []],
      },
      turns: { a: 100, b: -5, c: 'soon', d: 1e15, ['__proto__']: 1 },
    });
    expect(read?.heads).toEqual({
      m: [
        [
          [10, 'a'],
          [86_400_000, 'd'],
        ],
        [[250, '']],
        [],
      ],
    });
    expect(read?.turns).toEqual({ a: 100, d: 86_400_000 });
    expect(Object.getPrototypeOf(read?.turns)).toBe(Object.prototype);
  });

  it('reads at most eight tenants per model and level, and refuses a message that is not an object', () => {
    const many = Array.from({ length: 20 }, (_, i) => [i, `t${i}`]);
    expect(readQueueDepths({ providers: {}, tenants: {}, heads: { m: [many] } })?.heads?.m[0]).toHaveLength(8);
    expect(readQueueDepths({ providers: {}, tenants: {}, turns: [1, 2] })).toBeUndefined();
    expect(readQueueDepths('queue')).toBeUndefined();
  });
});
