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
  const worker = { id: 'w', remote: false, wildcard: false, models: new Set(['m']), deferUntil: 0, deferTimer: undefined } as unknown as WorkerSession;
  /** Replica b publishes one request of `priority` that has waited `waited` ms (tenant `tenant`). */
  const publish = (waited: number, priority: number, tenant = 't') => {
    const levels: unknown[] = [[], [], []];
    levels[priority] = [[waited, tenant]];
    elsewhere.set('b', readQueueDepths({ providers: { p: 1 }, tenants: { [tenant]: 1 }, heads: { m: levels } }), clock.now());
  };
  return { clock, elsewhere, order, worker, offered, publish };
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

  it('does not hold for a low request that has not aged yet, nor for a worker connected elsewhere', () => {
    const { order, worker, clock, publish } = setup();
    publish(900, 2);
    expect(order.filterFor(worker, clock.now())!(req(clock.now()))).toBe(true);
    // A worker of replica c: nothing waits at c, so nothing keeps this replica from sending to it.
    expect(order.filterFor({ ...worker, remote: true, replica: 'c' } as WorkerSession, clock.now())).toBeUndefined();
  });

  it('does not send to another replica’s worker a request that one waiting at that replica is clearly ahead of (and holds nothing)', () => {
    const { order, worker, clock, publish } = setup();
    publish(500, 0, 'x'); // a high request waits at b
    const atB = { ...worker, remote: true, replica: 'b' } as WorkerSession;
    const fair = order.filterFor(atB, clock.now())!;
    expect(fair(req(clock.now(), 1, 'y'))).toBe(false); // b's own queue takes b's worker's slot
    expect(fair(req(clock.now() - 1_000, 0, 'x'))).toBe(true); // x's older request here goes first
    expect(order.holds(atB)).toBe(false);
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
