import { WorkerSession } from '../fleet/worker-session';
import { poolCapacity } from './pool-capacity';

const channel = { send() {}, close() {} };
let seq = 0;

function worker(maxConcurrent: number, opts: { assigned?: number; held?: number; reported?: number; draining?: boolean } = {}): WorkerSession {
  const w = new WorkerSession(
    { id: `w${++seq}`, provider: 'p', name: `w${seq}`, models: ['m'], maxConcurrent, remoteAddress: '127.0.0.1', connectedAt: 0 },
    channel,
  );
  for (let i = 0; i < (opts.assigned ?? 0); i++) w.assigned.set(`r${i}`, {} as never);
  for (let i = 0; i < (opts.held ?? 0); i++) w.held.set(`h${i}`, {} as never);
  w.externalLoad = opts.reported ?? 0;
  w.draining = opts.draining ?? false;
  return w;
}

describe('poolCapacity (one computation for /v1/capabilities and /v1/pools/:id/health)', () => {
  it('counts reported load as busy, leaves draining workers out of total, busy and free, and keeps busy + free = total', () => {
    const workers = [
      worker(4, { assigned: 1, held: 1, reported: 1 }), // 3 busy, 1 free
      worker(2, { reported: 5 }), // reported beyond its slots: 2 busy, 0 free
      worker(8, { assigned: 2, draining: true }), // in none of the three, but its requests are in flight
    ];
    const c = poolCapacity(workers, () => false);
    expect(c.slots).toEqual({ total: 6, busy: 5, free: 1 });
    expect(c.slots.busy + c.slots.free).toBe(c.slots.total);
    expect(c.inFlight).toBe(3);
    expect(c.serving).toBe(true);
  });

  it('an ejected worker keeps its slots but does not make the pool ready; draining ones neither', () => {
    const ejected = worker(2);
    expect(poolCapacity([ejected, worker(2, { draining: true })], (w) => w === ejected)).toEqual({
      slots: { total: 2, busy: 0, free: 2 },
      inFlight: 0,
      serving: false,
    });
    expect(poolCapacity([], () => false)).toEqual({ slots: { total: 0, busy: 0, free: 0 }, inFlight: 0, serving: false });
  });
});
