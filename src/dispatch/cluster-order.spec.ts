import { FakeClock } from '../../test/support/fake-clock';
import type { WorkerSession } from '../fleet/worker-session';
import { Queueable } from '../queue/queue-order';
import { readQueueDepths, RemoteDepths } from '../queue/remote-depths';
import { TenantTurns } from '../queue/tenant-turns';
import { ClusterOrder, DEFER_MS } from './cluster-order';

const AGING = 1_000;
const req = (receivedAt: number, priority = 1, tenant = 't'): Queueable => ({ receivedAt, targetModel: 'm', queueProvider: 'p', tenant, priority });

function setup() {
  const clock = new FakeClock();
  const elsewhere = new RemoteDepths(AGING, new TenantTurns());
  const offered: WorkerSession[] = [];
  const order = new ClusterOrder(true, elsewhere, clock, (w) => offered.push(w));
  const worker = {
    id: 'w',
    remote: false,
    wildcard: false,
    models: new Set(['m']),
    freeSlots: 1,
    deferUntil: 0,
    deferTimer: undefined,
  } as unknown as WorkerSession;
  /** The same worker as connected to replica `replica`, seen here through what that replica publishes. */
  const remote = (replica: string) => ({ ...worker, remote: true, replica }) as WorkerSession;
  /** Replica b publishes one request of `priority` that has waited `waited` ms (tenant `tenant`). */
  const publish = (waited: number, priority: number, tenant = 't') => {
    const levels: unknown[] = [[], [], []];
    levels[priority] = [[waited, tenant]];
    elsewhere.set('b', readQueueDepths({ providers: { p: 1 }, tenants: { [tenant]: 1 }, heads: { m: levels } }), clock.now());
  };
  return { clock, elsewhere, order, worker, remote, offered, publish };
}

describe('ClusterOrder', () => {
  it('one process, or nothing waiting elsewhere: no filter at all', () => {
    const { order, worker, clock } = setup();
    expect(order.active).toBe(false);
    expect(order.filterFor(worker, clock.now())).toBeUndefined();
  });

  it('holds a freed slot for an aged low request at another replica, then offers the worker again', () => {
    const { order, worker, clock, offered, publish } = setup();
    publish(1_500, 2); // low, but waited past one aging period: competes as normal
    const mine = req(clock.now() - 100);
    const fair = order.filterFor(worker, clock.now())!;
    expect(fair(mine)).toBe(false);
    expect(order.holds(worker)).toBe(true);
    expect(fair(req(clock.now() - 100, 0))).toBe(true); // a high request here is ahead of it
    clock.advance(DEFER_MS);
    expect(offered).toEqual([worker]);
    expect(order.holds(worker)).toBe(false);
    expect(order.filterFor(worker, clock.now())!(mine)).toBe(true); // held long enough: served here
  });

  it('looks at a held slot again as soon as the other replica publishes anew (its request was served meanwhile)', () => {
    const { order, worker, clock, offered, elsewhere, publish } = setup();
    publish(500, 1, 'x');
    expect(order.filterFor(worker, clock.now())!(req(clock.now(), 1, 'y'))).toBe(false);
    clock.advance(20);
    elsewhere.set('b', readQueueDepths({ providers: {}, tenants: {}, turns: { x: 20 } }), clock.now());
    expect(offered).toEqual([worker]);
    expect(order.active).toBe(false); // nothing waits there any more: the next pull takes no filter
    clock.advance(DEFER_MS);
    expect(offered).toEqual([worker, worker]); // the recheck timer still fires once, harmlessly
    elsewhere.set('b', undefined, clock.now());
    expect(offered).toHaveLength(2); // no longer held: nothing offered
  });

  it('does not hold for a low request that has not aged yet, wherever the worker is connected', () => {
    const { order, worker, remote, clock, publish } = setup();
    publish(900, 2);
    expect(order.filterFor(worker, clock.now())!(req(clock.now()))).toBe(true);
    const atC = remote('c');
    expect(order.filterFor(atC, clock.now())!(req(clock.now()))).toBe(true);
    expect(order.holds(atC)).toBe(false);
  });

  it('another replica’s worker: a request waiting at that replica clearly ahead holds the slot for it', () => {
    const { order, remote, clock, publish } = setup();
    publish(500, 0, 'x'); // a high request waits at b
    const atB = remote('b');
    const fair = order.filterFor(atB, clock.now())!;
    expect(fair(req(clock.now(), 1, 'y'))).toBe(false); // b's own queue takes b's worker's slot
    expect(fair(req(clock.now() - 1_000, 0, 'x'))).toBe(true); // x's older request here goes first
  });

  it('another replica’s worker: a request here waits for an older one at a third replica (not only the worker’s own), then is offered the slot again', () => {
    // The worker is connected to a, which has nothing waiting; b's request is 300 ms older than this one.
    const { order, remote, clock, offered, publish } = setup();
    publish(300, 1, 'x');
    const atA = remote('a');
    const mine = req(clock.now(), 1, 'y');
    const fair = order.filterFor(atA, clock.now())!;
    expect(fair(mine)).toBe(false); // not forwarded to a: b forwards its own there
    expect(order.holds(atA)).toBe(true); // nor does a new arrival here take the slot meanwhile
    expect(fair(req(clock.now() - 300, 1, 'y'))).toBe(true); // one within the slack of b's goes
    clock.advance(DEFER_MS);
    expect(offered).toEqual([atA]); // the bound passed: the slot is offered here again
    // Still free: b could not send its request there (a capability, a limit, no link): held in vain.
    expect(order.filterFor(atA, clock.now())!(mine)).toBe(true);
    expect(order.filterFor(atA, clock.now())).toBeUndefined(); // and not held for again by this worker
  });

  it('another replica’s worker taken by the older request: its next freed slot is held anew, not found past the last deadline', () => {
    const { order, remote, clock, offered, publish } = setup();
    publish(300, 1, 'x');
    const atA = remote('a');
    expect(order.filterFor(atA, clock.now())!(req(clock.now(), 1, 'y'))).toBe(false);
    // b's request took the slot: a publishes the worker busy (no reserve of this replica sees it).
    clock.advance(20);
    (atA as { freeSlots: number }).freeSlots = 0;
    clock.advance(DEFER_MS);
    expect(offered).toEqual([atA]);
    // A while later the worker frees its slot again; b's next request is again 300 ms older than ours.
    clock.advance(500);
    (atA as { freeSlots: number }).freeSlots = 1;
    publish(300, 1, 'x');
    expect(order.filterFor(atA, clock.now())!(req(clock.now(), 1, 'y'))).toBe(false);
    expect(order.holds(atA)).toBe(true);
  });

  it('another replica’s worker: fresh figures look at the held slot again at once; taken meanwhile, the hold is over', () => {
    const { order, remote, clock, offered, elsewhere } = setup();
    const waitsAtB = (waited: number) =>
      elsewhere.set('b', readQueueDepths({ providers: {}, tenants: {}, heads: { m: [[], [[waited, 'x']], []] } }), clock.now());
    waitsAtB(300);
    const atA = remote('a');
    expect(order.filterFor(atA, clock.now())!(req(clock.now(), 1, 'y'))).toBe(false);
    clock.advance(10);
    waitsAtB(310);
    expect(offered).toEqual([atA]); // looked at again (still held: the pull filters as before)
    (atA as { freeSlots: number }).freeSlots = 0; // a published it busy
    clock.advance(10);
    waitsAtB(320);
    expect(offered).toEqual([atA]); // nothing to offer
    expect(order.holds(atA)).toBe(false);
  });

  it('does not hold for an older request of a tenant served more recently than the local one’s', () => {
    const { order, worker, clock, elsewhere, publish } = setup();
    publish(100, 1, 'x');
    elsewhere.set('c', readQueueDepths({ providers: {}, tenants: {}, turns: { x: 10 } }), clock.now());
    expect(order.filterFor(worker, clock.now())!(req(clock.now(), 1, 'y'))).toBe(true);
    expect(order.filterFor(worker, clock.now())!(req(clock.now(), 1, 'x'))).toBe(false); // same tenant: the older first
  });

  it('a request a slot was held for in vain (its replica never sent it) holds no later slot of that worker', () => {
    const { order, worker, clock, publish } = setup();
    publish(1_000, 1, 'blocked'); // e.g. its tenant is at its concurrency limit at b: b cannot forward it
    const fair = order.filterFor(worker, clock.now())!;
    expect(fair(req(clock.now(), 1, 'y'))).toBe(false);
    clock.advance(DEFER_MS);
    expect(order.filterFor(worker, clock.now())!(req(clock.now() - 10, 1, 'y'))).toBe(true); // held long enough
    // The next freed slot: b publishes the same request again (it still waits, older by now); no hold.
    worker.deferUntil = 0;
    clock.advance(20);
    publish(1_120, 1, 'blocked');
    expect(order.filterFor(worker, clock.now())).toBeUndefined();
    // A request b has not been seen to fail to send is still held for.
    publish(300, 1, 'other');
    expect(order.filterFor(worker, clock.now())!(req(clock.now(), 1, 'y'))).toBe(false);
  });
});
