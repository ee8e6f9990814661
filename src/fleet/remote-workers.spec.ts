import { FakeClock } from '../../test/support/fake-clock';
import { publishedWorker } from '../../test/support/published-worker';
import { RecordingChannel, workerSession } from '../../test/support/dispatch-harness';
import { loadConfig } from '../config';
import { LifecycleState } from '../observability/lifecycle-state';
import { MetricsService } from '../observability/metrics.service';
import { WorkerRecords } from '../registry/worker-records.port';
import { Fleet } from './fleet.service';
import { publishWorker, readPublishedWorker } from './published-worker';
import { RemoteWorkers } from './remote-workers';

class NoRecords extends WorkerRecords {
  readonly connected: string[] = [];
  recordConnected(r: { id: string }) {
    this.connected.push(r.id);
  }
  recordModels() {}
  recordHeartbeat() {}
  recordDisconnected() {}
  recentlyKnowsModel() {
    return false;
  }
}

const published = publishedWorker;

describe('RemoteWorkers: other replicas’ workers in this replica’s fleet', () => {
  let clock: FakeClock;
  let fleet: Fleet;
  let remote: RemoteWorkers;
  let records: NoRecords;
  const channels = new Map<string, RecordingChannel>();
  const freed: string[] = [];

  beforeEach(() => {
    clock = new FakeClock();
    records = new NoRecords();
    const config = loadConfig({ PROVIDER_NAME: 'local', INSTANCE_ID: 'gw-a' });
    fleet = new Fleet(config, clock, records, new MetricsService(), new LifecycleState());
    fleet.on('slotFreed', ({ worker }) => freed.push(worker.id));
    freed.length = 0;
    remote = new RemoteWorkers(
      fleet,
      (_replica, id) => {
        const c = new RecordingChannel();
        channels.set(id, c);
        return c;
      },
      () => clock.now(),
    );
  });

  it('adds, updates and removes what a replica publishes; routing sees its models and free slots', () => {
    remote.apply('gw-b', [published('w1', { load: 1 })], [], false);
    const w = fleet.directory.get('w1')!;
    expect(w).toMatchObject({ replica: 'gw-b', remote: true, freeSlots: 1 });
    expect([...fleet.directory.servingExactly('m1')].map((x) => x.id)).toEqual(['w1']);
    expect(freed).toEqual(['w1']);
    // Not this replica's worker: no record, no local count.
    expect(records.connected).toEqual([]);
    expect(fleet.localOf('local')).toBe(0);

    remote.apply('gw-b', [published('w1', { models: ['m2'], load: 2 })], [], false);
    expect(fleet.directory.servingExactly('m1').size).toBe(0);
    expect(fleet.directory.servingExactly('m2').size).toBe(1);
    expect(w.freeSlots).toBe(0);

    remote.apply('gw-b', [], ['w1'], false);
    expect(fleet.directory.get('w1')).toBeUndefined();
  });

  it('a full list drops the replica’s workers it no longer names; a departed replica loses them all', () => {
    remote.apply('gw-b', [published('w1'), published('w2')], [], true);
    remote.apply('gw-c', [published('w3', { replica: 'gw-c' })], [], true);
    remote.apply('gw-b', [published('w2')], [], true);
    expect([...fleet.directory.all()].map((w) => w.id).sort()).toEqual(['w2', 'w3']);
    remote.dropReplica('gw-c');
    expect([...fleet.directory.all()].map((w) => w.id)).toEqual(['w2']);
    // A worker claimed by a replica other than the sender is ignored.
    remote.apply('gw-b', [published('w9', { replica: 'gw-c' })], [], false);
    expect(fleet.directory.get('w9')).toBeUndefined();
  });

  it('the published load counts this replica’s own forwarded requests once', () => {
    remote.apply('gw-b', [published('w1', { max_concurrent: 3 })], [], false);
    const w = fleet.sessions.get('w1')!;
    const lease = fleet.reserve(w, 'r1', 'm1')!;
    // Its replica now reports 2 in flight: ours and one of another replica.
    remote.apply('gw-b', [published('w1', { max_concurrent: 3, load: 2 })], [], false);
    expect(w.load).toBe(2);
    expect(w.freeSlots).toBe(1);
    lease.release();
    expect(w.freeSlots).toBe(2);
  });

  it('a worker that leaves while this replica has requests on it stays, busy, until they end', () => {
    remote.apply('gw-b', [published('w1')], [], false);
    const w = fleet.sessions.get('w1')!;
    const lease = fleet.reserve(w, 'r1', 'm1')!;
    const gone: string[] = [];
    fleet.on('workerGone', ({ worker, orphans }) => gone.push(`${worker.id}:${orphans.length}`));
    remote.apply('gw-b', [], ['w1'], false);
    expect(fleet.sessions.get('w1')).toBe(w);
    expect(w.freeSlots).toBe(0);
    expect(gone).toEqual([]);
    lease.release();
    expect(fleet.sessions.get('w1')).toBeUndefined();
    expect(gone).toEqual(['w1:0']);
  });

  it('a replica that had no free slot after all: counted full until it publishes again', () => {
    remote.apply('gw-b', [published('w1', { max_concurrent: 4 })], [], false);
    const w = fleet.sessions.get('w1')!;
    remote.markFull(w);
    expect(w.freeSlots).toBe(0);
    remote.apply('gw-b', [published('w1', { max_concurrent: 4, load: 1 })], [], false);
    expect(w.freeSlots).toBe(3);
  });

  it('drains and evictions are the owner’s: a remote worker is never sent graceful_shutdown from here', () => {
    remote.apply('gw-b', [published('w1')], [], false);
    const w = fleet.sessions.get('w1')!;
    fleet.drain(w, 1000, 'admin');
    fleet.evict(w);
    expect(channels.get('w1')!.sent).toEqual([]);
    expect(channels.get('w1')!.closedWith).toBeUndefined();
  });

  it('a local worker publishes as plain data that reads back the same', () => {
    const local = workerSession(
      'w5',
      'local',
      'gpu',
      ['m1', '*'],
      4,
      '10.0.0.1',
      clock.now(),
      new RecordingChannel(),
      { m1: { tools: true } },
      ['/v1/chat/completions'],
      7,
    );
    fleet.attach(local);
    fleet.reserve(local, 'r', 'm1');
    clock.advance(250);
    const data = JSON.parse(JSON.stringify(publishWorker(local, clock.now())));
    expect(readPublishedWorker(data)).toEqual({ ...data, health: null });
    expect(data).toMatchObject({ id: 'w5', replica: 'gw-a', models: ['m1', '*'], load: 1, priority: 7, seen_ago_ms: 250 });
  });

  it('malformed or hostile data is refused or clamped, never trusted', () => {
    expect(readPublishedWorker(null)).toBeUndefined();
    expect(readPublishedWorker({ ...published('w1'), id: 5 })).toBeUndefined();
    expect(readPublishedWorker({ ...published('w1'), models: 'm1' })).toBeUndefined();
    expect(readPublishedWorker({ ...published('w1'), models: Array(5000).fill('m') })).toBeUndefined();
    const clamped = readPublishedWorker({
      ...published('w1'),
      max_concurrent: Number.POSITIVE_INFINITY,
      load: -5,
      seen_ago_ms: 'x',
      capabilities: { m1: { context_length: 1e30, tools: 'yes' } },
    })!;
    expect(clamped.max_concurrent).toBe(1_000_000);
    expect(clamped.load).toBe(0);
    expect(clamped.seen_ago_ms).toBe(0);
    expect(clamped.capabilities).toEqual({ m1: { context_length: 100_000_000 } });
  });
});
