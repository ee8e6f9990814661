import { FakeClock } from '../../test/support/fake-clock';
import { HeartbeatMembership } from './heartbeat-membership';
import { MembershipChange, ReplicaRecord } from './membership.port';
import { MembershipStore, parseRecord, ReplicaAnnouncement } from './membership-store';
import { SingleProcessMembership } from './single-process-membership';

const TIMEOUT = 9000;

/** A shared "Redis": one map of records stamped by the fake clock, which every replica's store reaches. */
class SharedBackend {
  readonly records = new Map<string, ReplicaRecord>();
  reachable = true;
  /** How far the store's clock (Redis TIME) is ahead of the replicas' own. */
  skewMs = 0;
  constructor(readonly clock: FakeClock) {}
  now(): number {
    return this.clock.now() + this.skewMs;
  }
}

class FakeStore implements MembershipStore {
  private readonly listeners: Array<(status: 'up' | 'down', reason?: string) => void> = [];
  closed = false;
  constructor(private readonly backend: SharedBackend) {}

  beat(self: ReplicaAnnouncement, timeoutMs: number): Promise<ReplicaRecord[]> {
    if (!this.backend.reachable) return Promise.reject(new Error('connect ECONNREFUSED'));
    this.backend.records.set(self.id, { ...self, last_seen: this.backend.now() });
    return this.list(timeoutMs);
  }
  list(timeoutMs: number): Promise<ReplicaRecord[]> {
    if (!this.backend.reachable) return Promise.reject(new Error('Command timed out'));
    const now = this.backend.now();
    for (const [id, r] of this.backend.records) if (r.last_seen < now - timeoutMs) this.backend.records.delete(id);
    return Promise.resolve([...this.backend.records.values()].map((r) => ({ ...r })));
  }
  leave(id: string): Promise<void> {
    this.backend.records.delete(id);
    return Promise.resolve();
  }
  connected(): boolean {
    return this.backend.reachable;
  }
  onStatus(listener: (status: 'up' | 'down', reason?: string) => void): void {
    this.listeners.push(listener);
  }
  emit(status: 'up' | 'down', reason?: string): void {
    for (const l of this.listeners) l(status, reason);
  }
  close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }
}

function replica(backend: SharedBackend, id: string, logs: string[] = []) {
  const store = new FakeStore(backend);
  const logger = { log: (m: string) => logs.push(`log ${m}`), warn: (m: string) => logs.push(`warn ${m}`) };
  const membership = new HeartbeatMembership({
    store,
    clock: backend.clock,
    replicaId: id,
    version: '1.2.3',
    replicaTimeoutMs: TIMEOUT,
    storeName: 'Redis at redis:6379',
    logger,
  });
  return { membership, store, logs };
}

const ids = (m: { members(): ReplicaRecord[] }) => m.members().map((r) => r.id);

describe('HeartbeatMembership', () => {
  let clock: FakeClock;
  let backend: SharedBackend;
  beforeEach(() => {
    clock = new FakeClock();
    backend = new SharedBackend(clock);
  });

  /** gw-a, then gw-b `laterMs` after it; gw-a's membership changes are recorded. */
  async function aThenB(laterMs: number) {
    const a = replica(backend, 'gw-a');
    const b = replica(backend, 'gw-b');
    const changes: MembershipChange[] = [];
    a.membership.onChange((c) => changes.push(c));
    a.membership.start('http://a');
    await clock.advanceAsync(laterMs);
    b.membership.start('http://b');
    return { a, b, changes };
  }

  it('announces itself with plain data and learns the others within one heartbeat (timeout / 3)', async () => {
    const a = replica(backend, 'gw-a');
    const b = replica(backend, 'gw-b');
    a.membership.start('http://gw-a:8080');
    await clock.advanceAsync(0);
    expect(ids(a.membership)).toEqual(['gw-a']);
    b.membership.start('http://gw-b:8080');
    await clock.advanceAsync(0);
    expect(ids(b.membership)).toEqual(['gw-b', 'gw-a']);
    await clock.advanceAsync(TIMEOUT / 3);
    expect(ids(a.membership)).toEqual(['gw-a', 'gw-b']);
    expect(a.membership.members()[1]).toEqual({
      id: 'gw-b',
      advertise_url: 'http://gw-b:8080',
      started_at: clock.now() - TIMEOUT / 3,
      // b's own heartbeat of this instant comes after a's read.
      last_seen: clock.now() - TIMEOUT / 3,
      version: '1.2.3',
    });
    expect(a.membership.degraded()).toBe(false);
    expect(a.logs).toEqual(['log joined the cluster at Redis at redis:6379 as gw-a (1 replica)']);
  });

  for (const skewMs of [0, 3_600_000, -7_000]) {
    it(`drops a replica that stopped heartbeating once its timeout has passed, between its own heartbeats (store clock ${skewMs} ms off)`, async () => {
      backend.skewMs = skewMs;
      // b starts 1 s after a: a's heartbeats fall 1 s (and 2 s) after b's, not at its timeout.
      const { a, b, changes } = await aThenB(1000);
      await clock.advanceAsync(TIMEOUT / 3);
      expect(ids(a.membership)).toEqual(['gw-a', 'gw-b']);
      expect(changes).toEqual([{ joined: ['gw-b'], left: [] }]);
      // b hangs (a crashed process, a paused VM): its heartbeats never reach the store again.
      b.store.beat = () => new Promise(() => undefined);
      const lastSeen = backend.records.get('gw-b')!.last_seen - skewMs;
      await clock.advanceAsync(lastSeen + TIMEOUT - clock.now());
      expect(ids(a.membership)).toEqual(['gw-a', 'gw-b']);
      // The store keeps it while `last_seen >= now - timeout`: a drops it the next millisecond, by itself.
      await clock.advanceAsync(1);
      expect(ids(a.membership)).toEqual(['gw-a']);
      expect(changes).toEqual([
        { joined: ['gw-b'], left: [] },
        { joined: [], left: ['gw-b'] },
      ]);
      // The store agrees on a's next heartbeat: nothing flaps back.
      await clock.advanceAsync(TIMEOUT);
      expect(ids(a.membership)).toEqual(['gw-a']);
      expect(changes).toHaveLength(2);
    });
  }

  it('keeps a live replica whose heartbeats a read has not seen yet (its deadline moves with each read)', async () => {
    const { a, changes } = await aThenB(TIMEOUT / 3 - 1);
    await clock.advanceAsync(TIMEOUT * 10);
    expect(ids(a.membership)).toEqual(['gw-a', 'gw-b']);
    expect(changes).toEqual([{ joined: ['gw-b'], left: [] }]);
  });

  it('a replica whose own process stalled past a heartbeat asks the store before dropping anyone', async () => {
    const { a, changes } = await aThenB(1000);
    await clock.advanceAsync(TIMEOUT);
    expect(ids(a.membership)).toEqual(['gw-a', 'gw-b']);
    // gw-a's event loop (or VM) stops for 7 s while gw-b keeps beating: when gw-a runs again, its
    // heartbeat and its expiry timer are due together, and gw-b's last heartbeat is unread here.
    const stall = 7000;
    backend.records.get('gw-b')!.last_seen = backend.now() + stall - 1000;
    clock.advance(stall);
    await clock.advanceAsync(0);
    expect(ids(a.membership)).toEqual(['gw-a', 'gw-b']);
    expect(changes).toEqual([{ joined: ['gw-b'], left: [] }]);
  });

  it('leaves at once on stop: the others no longer list it on their next read', async () => {
    const a = replica(backend, 'gw-a');
    const b = replica(backend, 'gw-b');
    a.membership.start('http://a');
    b.membership.start('http://b');
    await clock.advanceAsync(0);
    await clock.advanceAsync(TIMEOUT / 3);
    const timers = clock.pendingTimers();
    await b.membership.stop();
    expect(b.store.closed).toBe(true);
    // b's heartbeat and its expiry timer are gone; a's remain.
    expect(clock.pendingTimers()).toBe(timers - 2);
    await a.membership.refresh();
    expect(ids(a.membership)).toEqual(['gw-a']);
  });

  it('degrades when the store fails (once, logged, alone in the list), keeps retrying and re-joins by itself', async () => {
    const a = replica(backend, 'gw-a');
    const b = replica(backend, 'gw-b');
    a.membership.start('http://a');
    b.membership.start('http://b');
    await clock.advanceAsync(0);
    await clock.advanceAsync(TIMEOUT / 3);
    const changes: MembershipChange[] = [];
    a.membership.onChange((c) => changes.push(c));
    a.logs.length = 0;

    backend.reachable = false;
    await clock.advanceAsync(TIMEOUT / 3);
    expect(a.membership.degraded()).toBe(true);
    expect(ids(a.membership)).toEqual(['gw-a']);
    expect(changes).toEqual([{ joined: [], left: ['gw-b'] }]);
    await clock.advanceAsync(TIMEOUT * 3);
    expect(a.logs).toEqual(['warn Redis at redis:6379 is unreachable (connect ECONNREFUSED): degraded, serving the workers connected here alone and retrying']);

    backend.reachable = true;
    a.store.emit('up');
    await clock.advanceAsync(0);
    expect(a.membership.degraded()).toBe(false);
    b.store.emit('up');
    expect(a.logs[1]).toBe('log Redis at redis:6379 answers again: re-joined the cluster as gw-a (1 replica)');
    await clock.advanceAsync(TIMEOUT / 3);
    expect(ids(a.membership)).toEqual(['gw-a', 'gw-b']);
  });

  it('a refresh while degraded re-joins when the store answers again (not a list that disagrees with the flag)', async () => {
    const a = replica(backend, 'gw-a');
    const b = replica(backend, 'gw-b');
    a.membership.start('http://a');
    b.membership.start('http://b');
    await clock.advanceAsync(0);
    backend.reachable = false;
    await a.membership.refresh();
    expect(a.membership.degraded()).toBe(true);
    backend.reachable = true;
    await a.membership.refresh();
    expect(a.membership.degraded()).toBe(false);
    expect(ids(a.membership)).toEqual(['gw-a', 'gw-b']);
  });

  it('a lost connection degrades at once, without waiting for the next heartbeat', async () => {
    const a = replica(backend, 'gw-a');
    a.membership.start('http://a');
    await clock.advanceAsync(0);
    a.store.emit('down', 'ECONNRESET');
    expect(a.membership.degraded()).toBe(true);
    expect(a.logs[1]).toMatch(/unreachable \(ECONNRESET\)/);
  });

  it('never throws into callers, nor lets a subscriber break the heartbeat', async () => {
    const a = replica(backend, 'gw-a');
    a.membership.onChange(() => {
      throw new Error('subscriber bug');
    });
    a.membership.start('http://a');
    backend.reachable = false;
    await expect(a.membership.refresh()).resolves.toBeUndefined();
    await clock.advanceAsync(TIMEOUT);
    backend.reachable = true;
    const b = replica(backend, 'gw-b');
    b.membership.start('http://b');
    await clock.advanceAsync(TIMEOUT / 3);
    expect(ids(a.membership)).toEqual(['gw-a', 'gw-b']);
  });

  it('does not announce before it knows its address, and is quiet about a store that is still connecting', async () => {
    backend.reachable = false;
    const a = replica(backend, 'gw-a');
    await clock.advanceAsync(TIMEOUT);
    expect(backend.records.size).toBe(0);
    expect(a.membership.members()).toEqual([expect.objectContaining({ id: 'gw-a', advertise_url: '' })]);
    a.store.emit('down', 'ECONNREFUSED');
    expect(a.membership.degraded()).toBe(false);
    backend.reachable = true;
    a.membership.start('http://a');
    a.store.emit('up');
    await clock.advanceAsync(0);
    expect(a.logs).toEqual(['log joined the cluster at Redis at redis:6379 as gw-a (1 replica)']);
  });
});

describe('SingleProcessMembership', () => {
  it('is this process alone: never degraded, no timers', async () => {
    const clock = new FakeClock();
    const m = new SingleProcessMembership('host-1', '1.0.0', clock.now(), () => clock.now());
    m.start('http://host-1:8080');
    clock.advance(5000);
    expect(m.enabled).toBe(false);
    expect(m.members()).toEqual([
      { id: 'host-1', advertise_url: 'http://host-1:8080', started_at: clock.now() - 5000, last_seen: clock.now(), version: '1.0.0' },
    ]);
    expect(m.degraded()).toBe(false);
    await m.refresh();
    await m.stop();
    expect(clock.pendingTimers()).toBe(0);
  });
});

describe('parseRecord', () => {
  it('keeps well-formed records and skips anything else', () => {
    const ok = JSON.stringify({ id: 'a', advertise_url: 'http://a', started_at: 1, version: 'v' });
    expect(parseRecord('a', 5, ok)).toEqual({ id: 'a', advertise_url: 'http://a', started_at: 1, last_seen: 5, version: 'v' });
    expect(parseRecord('b', 5, ok)).toBeUndefined();
    expect(parseRecord('a', NaN, ok)).toBeUndefined();
    for (const bad of ['', 'null', '[]', '{"id":"a"}', '{']) expect(parseRecord('a', 5, bad)).toBeUndefined();
  });
});
