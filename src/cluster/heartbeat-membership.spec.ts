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
  constructor(readonly clock: FakeClock) {}
}

class FakeStore implements MembershipStore {
  private readonly listeners: Array<(status: 'up' | 'down', reason?: string) => void> = [];
  closed = false;
  constructor(private readonly backend: SharedBackend) {}

  beat(self: ReplicaAnnouncement, timeoutMs: number): Promise<ReplicaRecord[]> {
    if (!this.backend.reachable) return Promise.reject(new Error('connect ECONNREFUSED'));
    this.backend.records.set(self.id, { ...self, last_seen: this.backend.clock.now() });
    return this.list(timeoutMs);
  }
  list(timeoutMs: number): Promise<ReplicaRecord[]> {
    if (!this.backend.reachable) return Promise.reject(new Error('Command timed out'));
    const now = this.backend.clock.now();
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

  it('drops a replica that stopped heartbeating within the replica timeout, and reports it as left', async () => {
    const a = replica(backend, 'gw-a');
    const b = replica(backend, 'gw-b');
    const changes: MembershipChange[] = [];
    a.membership.onChange((c) => changes.push(c));
    a.membership.start('http://a');
    b.membership.start('http://b');
    await clock.advanceAsync(0);
    await clock.advanceAsync(TIMEOUT / 3);
    expect(ids(a.membership)).toEqual(['gw-a', 'gw-b']);
    expect(changes).toEqual([{ joined: ['gw-b'], left: [] }]);
    // b hangs (a crashed process, a paused VM): its heartbeats never reach the store again.
    const lastSeen = clock.now();
    b.store.beat = () => new Promise(() => undefined);
    await clock.advanceAsync(TIMEOUT - 1);
    expect(ids(a.membership)).toEqual(['gw-a', 'gw-b']);
    await clock.advanceAsync(TIMEOUT / 3 + 1);
    expect(ids(a.membership)).toEqual(['gw-a']);
    expect(clock.now() - lastSeen).toBeLessThanOrEqual(TIMEOUT + TIMEOUT / 3);
    expect(changes[1]).toEqual({ joined: [], left: ['gw-b'] });
  });

  it('leaves at once on stop: the others no longer list it on their next read', async () => {
    const a = replica(backend, 'gw-a');
    const b = replica(backend, 'gw-b');
    a.membership.start('http://a');
    b.membership.start('http://b');
    await clock.advanceAsync(0);
    await clock.advanceAsync(TIMEOUT / 3);
    await b.membership.stop();
    expect(b.store.closed).toBe(true);
    expect(clock.pendingTimers()).toBe(1);
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
