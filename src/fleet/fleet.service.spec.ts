import { FakeClock } from '../../test/support/fake-clock';
import { RecordingChannel, workerSession } from '../../test/support/dispatch-harness';
import { loadConfig } from '../config';
import { Features, ServerToWorkerMessage } from '../protocol';
import { WorkerConnectedRecord, WorkerRecords } from '../registry/worker-records.port';
import { LifecycleState } from '../observability/lifecycle-state';
import { MetricsService } from '../observability/metrics.service';
import { Fleet } from './fleet.service';
import { WorkerSession } from './worker-session';

/** Worker records kept in memory: what the Fleet told persistence, in order. */
class MemoryWorkerRecords extends WorkerRecords {
  readonly connected: WorkerConnectedRecord[] = [];
  readonly disconnected: Array<[string, number]> = [];
  readonly models: Array<[string, string[]]> = [];
  readonly heartbeats: Array<[string, number]> = [];
  recordConnected(r: WorkerConnectedRecord) {
    this.connected.push(r);
  }
  recordModels(id: string, models: string[]) {
    this.models.push([id, [...models]]);
  }
  recordHeartbeat(id: string, at: number) {
    this.heartbeats.push([id, at]);
  }
  recordDisconnected(id: string, at: number) {
    this.disconnected.push([id, at]);
  }
  recentlyKnowsModel() {
    return false;
  }
}

interface WorkerOptions {
  id?: string;
  models?: string[];
  max?: number;
  features?: string[];
}

const SECOND = 1000;

describe('Fleet', () => {
  let clock: FakeClock;
  let records: MemoryWorkerRecords;
  let lifecycle: LifecycleState;
  let fleet: Fleet;
  /** Every event the Fleet emitted, as `event:workerId` (plus details where they matter). */
  let events: string[];
  let seq = 0;

  beforeEach(() => {
    clock = new FakeClock();
    const config = loadConfig({ CANCEL_GRACE_SECS: '5', SHUTDOWN_DRAIN_TIMEOUT_SECS: '30', PROVIDER_NAME: 'local', INSTANCE_ID: 'replica-1' });
    records = new MemoryWorkerRecords();
    lifecycle = new LifecycleState();
    fleet = new Fleet(config, clock, records, new MetricsService(), lifecycle);
    events = [];
    fleet.on('workerJoined', ({ worker }) => events.push(`workerJoined:${worker.id}`));
    fleet.on('slotFreed', ({ worker }) => events.push(`slotFreed:${worker.id}`));
    fleet.on('workerGone', ({ worker, orphans }) => events.push(`workerGone:${worker.id}:${orphans.map((l) => l.requestId).join(',')}`));
    fleet.on('modelsChanged', ({ worker, dropped }) => events.push(`modelsChanged:${worker.id}:${dropped.join(',')}`));
    fleet.on('drainExpired', ({ worker, reason }) => events.push(`drainExpired:${worker.id}:${reason}`));
  });

  function worker(opts: WorkerOptions = {}): { worker: WorkerSession; channel: RecordingChannel } {
    const channel = new RecordingChannel();
    const id = opts.id ?? `w-${++seq}`;
    const w = workerSession(id, 'local', `name-${id}`, opts.models ?? ['m'], opts.max ?? 1, '10.0.0.1', clock.now(), channel);
    if (opts.features) w.features = new Set(opts.features);
    return { worker: w, channel };
  }

  function attached(opts: WorkerOptions = {}): { worker: WorkerSession; channel: RecordingChannel } {
    const made = worker(opts);
    fleet.attach(made.worker);
    events = [];
    return made;
  }

  const framesOf = (channel: RecordingChannel, type: ServerToWorkerMessage['type']) => channel.sent.filter((m) => m.type === type);

  describe('attach', () => {
    it('emits workerJoined then slotFreed, indexes the worker and records it', () => {
      const { worker: w } = worker({ id: 'w-a', models: ['m', 'n'], max: 2 });
      fleet.attach(w);
      expect(events).toEqual(['workerJoined:w-a', 'slotFreed:w-a']);
      expect(fleet.sessions.get('w-a')).toBe(w);
      expect(fleet.directory.get('w-a')).toBe(w);
      expect([...fleet.directory.servingExactly('n')]).toEqual([w]);
      expect([...fleet.sessions.ofProvider('local')]).toEqual([w]);
      expect(w.replica).toBe('replica-1');
      expect(records.connected).toEqual([
        { id: 'w-a', provider: 'local', name: 'name-w-a', models: ['m', 'n'], maxConcurrent: 2, remoteAddress: '10.0.0.1', connectedAt: clock.now() },
      ]);
    });

    it('while shutting down: the worker joins but is drained at once and offered nothing', () => {
      lifecycle.beginShutdown();
      const { worker: w, channel } = worker({ id: 'w-late' });
      fleet.attach(w);
      expect(events).toEqual(['workerJoined:w-late']);
      expect(channel.sent).toEqual([{ type: 'graceful_shutdown', reason: 'server_shutdown', drain_timeout_secs: 30 }]);
      expect(channel.closedWith).toEqual([1000, 'graceful shutdown complete']);
      expect(fleet.reserve(w, 'r1', 'm')).toBeNull();
    });
  });

  describe('reserve and leases', () => {
    it('grants leases only while the worker has free slots, in send order', () => {
      const { worker: w, channel } = attached({ max: 2 });
      const a = fleet.reserve(w, 'r1', 'm')!;
      const b = fleet.reserve(w, 'r2', 'm')!;
      expect([a.requestId, a.model, a.worker, a.held]).toEqual(['r1', 'm', w, true]);
      expect(b.sentSeq).toBeGreaterThan(a.sentSeq);
      expect(w.freeSlots).toBe(0);
      expect(fleet.reserve(w, 'r3', 'm')).toBeNull();
      b.send({ type: 'models_refresh', reason: 'x' });
      expect(channel.sent).toEqual([{ type: 'models_refresh', reason: 'x' }]);
      expect(fleet.inFlightFor(w, 'm')).toBe(2);
      expect(fleet.inFlightFor(w, 'other')).toBe(0);
    });

    it('grants nothing on a worker that is gone', () => {
      const { worker: w } = attached();
      fleet.detach(w);
      expect(fleet.reserve(w, 'r1', 'm')).toBeNull();
    });

    it('release frees the slot and tells release watchers; slotFreed waits for announceFree; only once', () => {
      const { worker: w } = attached();
      const heard: string[] = [];
      const stop = fleet.watchReleases(w, () => heard.push('released'));
      const lease = fleet.reserve(w, 'r1', 'm')!;
      lease.release();
      expect(lease.held).toBe(false);
      expect(w.freeSlots).toBe(1);
      expect(heard).toEqual(['released']);
      expect(events).toEqual([]);
      lease.announceFree();
      expect(events).toEqual(['slotFreed:' + w.id]);
      expect(w.isLate('r1')).toBe(true); // late frames of a finished request are dropped, not fatal
      lease.release();
      expect(heard).toEqual(['released']);
      stop();
      fleet.reserve(w, 'r2', 'm')!.release();
      expect(heard).toEqual(['released']);
    });
  });

  describe('cancel', () => {
    it('sends one cancel with the reason and holds the slot until the worker confirms', () => {
      const { worker: w, channel } = attached();
      const heard: string[] = [];
      fleet.watchReleases(w, () => heard.push('released'));
      const lease = fleet.reserve(w, 'r1', 'm')!;
      expect(lease.cancel('timeout')).toBe('timeout');
      expect(lease.cancel('timeout')).toBeUndefined();
      lease.release();
      expect(framesOf(channel, 'cancel')).toEqual([{ type: 'cancel', request_id: 'r1', reason: 'timeout' }]);
      expect(heard).toEqual(['released']);
      expect(w.freeSlots).toBe(0);
      expect(fleet.reserve(w, 'r2', 'm')).toBeNull();
      expect(events).toEqual([]);
      expect(fleet.confirmCancelled(w, 'r1')).toBe(true);
      expect(w.freeSlots).toBe(1);
      expect(events).toEqual(['slotFreed:' + w.id]);
      expect(fleet.confirmCancelled(w, 'r1')).toBe(false);
      expect(w.isLate('r1')).toBe(true);
    });

    it('sends extended reasons only to workers that negotiated cancel_reasons (client_disconnect otherwise)', () => {
      const { worker: old, channel: oldChannel } = attached();
      const { worker: modern, channel: modernChannel } = attached({ features: [Features.CANCEL_REASONS] });
      expect(fleet.reserve(old, 'r1', 'm')!.cancel('client_too_slow')).toBe('client_disconnect');
      expect(fleet.reserve(modern, 'r2', 'm')!.cancel('stream_too_large')).toBe('stream_too_large');
      expect(framesOf(oldChannel, 'cancel')).toEqual([{ type: 'cancel', request_id: 'r1', reason: 'client_disconnect' }]);
      expect(framesOf(modernChannel, 'cancel')).toEqual([{ type: 'cancel', request_id: 'r2', reason: 'stream_too_large' }]);
    });

    it('gives the held slot back when the grace period ends', () => {
      const { worker: w } = attached();
      fleet.reserve(w, 'r1', 'm')!.cancel('client_disconnect');
      clock.advance(5 * SECOND - 1);
      expect(w.freeSlots).toBe(0);
      clock.advance(1);
      expect(w.freeSlots).toBe(1);
      expect(events).toEqual(['slotFreed:' + w.id]);
    });

    it('a pong reporting lower load frees held slots of requests sent before its ping', () => {
      const { worker: w } = attached();
      fleet.reserve(w, 'r1', 'm')!.cancel('timeout');
      w.pingSent();
      fleet.onPong(w, 0);
      expect(w.freeSlots).toBe(1);
      expect(events).toEqual(['slotFreed:' + w.id]);
      expect(records.heartbeats).toEqual([[w.id, clock.now()]]);
    });

    it('a pong does not free the slot of a request sent after its ping (the worker had not counted it)', () => {
      const { worker: w } = attached();
      w.pingSent();
      fleet.reserve(w, 'r1', 'm')!.cancel('timeout');
      fleet.onPong(w, 0);
      expect(w.freeSlots).toBe(0);
      expect(w.held.has('r1')).toBe(true);
    });

    it('a pong frees the held slot it can account for and keeps the one sent after its ping, whatever the cancel order', () => {
      const { worker: w } = attached({ max: 2 });
      const before = fleet.reserve(w, 'r-before', 'm')!;
      w.pingSent();
      const after = fleet.reserve(w, 'r-after', 'm')!;
      after.cancel('timeout');
      before.cancel('timeout');
      fleet.onPong(w, 0);
      expect([...w.held.keys()]).toEqual(['r-after']);
      expect(w.freeSlots).toBe(1);
    });

    it('a load reported with models_update (moment unknown) frees no held slot', () => {
      const { worker: w } = attached();
      fleet.reserve(w, 'r1', 'm')!.cancel('timeout');
      fleet.onModelsChanged(w, { models: ['m'], currentLoad: 0 });
      expect(w.held.has('r1')).toBe(true);
      expect(w.freeSlots).toBe(0);
    });
  });

  describe('drain', () => {
    it('sends graceful_shutdown (deadline rounded up to seconds) once and closes an idle worker at once', () => {
      const { worker: w, channel } = attached();
      fleet.drain(w, 2_500, 'maintenance');
      fleet.drain(w, 2_500, 'maintenance');
      expect(channel.sent).toEqual([{ type: 'graceful_shutdown', reason: 'maintenance', drain_timeout_secs: 3 }]);
      expect(channel.closedWith).toEqual([1000, 'graceful shutdown complete']);
      expect(w.draining).toBe(true);
      expect(w.freeSlots).toBe(0);
      expect(clock.pendingTimers()).toBe(0);
    });

    it('closes with "graceful shutdown complete" once the last lease is released; offers no work meanwhile', () => {
      const { worker: w, channel } = attached({ max: 2 });
      const a = fleet.reserve(w, 'r1', 'm')!;
      const b = fleet.reserve(w, 'r2', 'm')!;
      fleet.drain(w, 10 * SECOND, 'maintenance');
      expect(fleet.reserve(w, 'r3', 'm')).toBeNull();
      a.release();
      a.announceFree();
      expect(channel.closedWith).toBeUndefined();
      b.release();
      b.announceFree();
      expect(channel.closedWith).toEqual([1000, 'graceful shutdown complete']);
      expect(events).toEqual([]);
      expect(clock.pendingTimers()).toBe(0);
    });

    it('at the deadline emits drainExpired with the cancel reason and closes "graceful shutdown timed out"', () => {
      const { worker: w, channel } = attached();
      fleet.reserve(w, 'r1', 'm');
      fleet.drain(w, 3 * SECOND, 'maintenance', 'server_shutdown');
      clock.advance(3 * SECOND - 1);
      expect(events).toEqual([]);
      expect(channel.closedWith).toBeUndefined();
      clock.advance(1);
      expect(events).toEqual([`drainExpired:${w.id}:server_shutdown`]);
      expect(channel.closedWith).toEqual([1000, 'graceful shutdown timed out']);
    });

    it("a drain's cancel reason defaults to graceful_shutdown", () => {
      const { worker: w } = attached();
      fleet.reserve(w, 'r1', 'm');
      fleet.drain(w, SECOND, 'maintenance');
      clock.advance(SECOND);
      expect(events).toEqual([`drainExpired:${w.id}:graceful_shutdown`]);
    });

    it('evict closes the worker at once, whatever it runs', () => {
      const { worker: w, channel } = attached();
      fleet.reserve(w, 'r1', 'm');
      fleet.evict(w);
      expect(channel.closedWith).toEqual([1000, 'graceful shutdown complete']);
      expect(w.freeSlots).toBe(0);
    });
  });

  describe('detach', () => {
    it('emits workerGone with the orphan leases and forgets the worker, its timers and its watchers', () => {
      const { worker: w } = attached({ id: 'w-gone', max: 3 });
      const heard: string[] = [];
      fleet.watchReleases(w, () => heard.push('released'));
      const a = fleet.reserve(w, 'r1', 'm')!;
      fleet.reserve(w, 'r2', 'm')!;
      fleet.reserve(w, 'r3', 'm')!.cancel('timeout'); // held, with a grace timer
      heard.length = 0;
      fleet.drain(w, 10 * SECOND, 'maintenance'); // and a drain timer
      fleet.detach(w);
      expect(events).toEqual(['workerGone:w-gone:r1,r2']);
      expect(fleet.sessions.get('w-gone')).toBeUndefined();
      expect(fleet.directory.servingExactly('m').size).toBe(0);
      expect(fleet.sessions.ofProvider('local').size).toBe(0);
      expect(records.disconnected).toEqual([['w-gone', clock.now()]]);
      expect(clock.pendingTimers()).toBe(0);
      // The orphans' leases ended without a frame; releasing one now changes nothing.
      expect(a.held).toBe(false);
      a.release();
      expect(heard).toEqual([]);
      fleet.detach(w);
      expect(events).toEqual(['workerGone:w-gone:r1,r2']);
    });

    it('ignores a stale session whose id now belongs to a newer connection', () => {
      const { worker: old } = attached({ id: 'w-same' });
      fleet.detach(old);
      const { worker: fresh } = attached({ id: 'w-same' });
      fleet.detach(old);
      expect(events).toEqual([]);
      expect(fleet.sessions.get('w-same')).toBe(fresh);
    });
  });

  describe('what workers report', () => {
    it('modelsChanged reports the dropped models and reindexes; the worker is offered work', () => {
      const { worker: w } = attached({ models: ['a', 'b'] });
      fleet.onModelsChanged(w, { models: ['b', 'c'], capabilities: { c: { vision: true } }, endpoints: ['/v1/embeddings'], priority: 3 });
      expect(events).toEqual([`modelsChanged:${w.id}:a`, `slotFreed:${w.id}`]);
      expect(fleet.directory.servingExactly('a').size).toBe(0);
      expect([...fleet.directory.servingExactly('c')]).toEqual([w]);
      expect(w.capabilities).toEqual({ c: { vision: true } });
      expect([...w.endpoints!]).toEqual(['/v1/embeddings']);
      expect(w.declaredPriority).toBe(3);
      expect(records.models).toEqual([[w.id, ['b', 'c']]]);
    });

    it('a wildcard worker drops nothing', () => {
      const { worker: w } = attached({ models: ['*', 'a'] });
      fleet.onModelsChanged(w, { models: ['*'] });
      expect(events[0]).toBe(`modelsChanged:${w.id}:`);
    });

    it('holdOut takes a model out of routing on the worker; releaseHolds puts it back and offers the worker', () => {
      const { worker: w } = attached({ models: ['a', 'b'] });
      fleet.holdOut(w, 'a');
      expect(fleet.directory.servingExactly('a').size).toBe(0);
      expect([...fleet.directory.servingExactly('b')]).toEqual([w]);
      expect(w.isHeldOut('a')).toBe(true);
      fleet.releaseHolds(w, ['a']);
      expect([...fleet.directory.servingExactly('a')]).toEqual([w]);
      expect(events).toEqual([`slotFreed:${w.id}`]);
    });

    it('requestModelsRefresh asks the worker for models_update', () => {
      const { worker: w, channel } = attached();
      fleet.requestModelsRefresh(w, 'operator');
      expect(channel.sent).toEqual([{ type: 'models_refresh', reason: 'operator' }]);
    });
  });

  describe('drainAll', () => {
    const settled = () => new Promise<void>((resolve) => setImmediate(resolve));

    it('resolves at once without workers', async () => {
      await expect(fleet.drainAll(SECOND)).resolves.toBeUndefined();
    });

    it('drains every worker and resolves when the last one is gone', async () => {
      const idle = attached();
      const busy = attached();
      fleet.reserve(busy.worker, 'r1', 'm');
      lifecycle.beginShutdown();
      let done = false;
      void fleet.drainAll(10 * SECOND).then(() => (done = true));
      expect(idle.channel.closedWith).toEqual([1000, 'graceful shutdown complete']);
      expect(framesOf(busy.channel, 'graceful_shutdown')).toEqual([{ type: 'graceful_shutdown', reason: 'server_shutdown', drain_timeout_secs: 10 }]);
      fleet.detach(idle.worker);
      await settled();
      expect(done).toBe(false);
      fleet.detach(busy.worker);
      await settled();
      expect(done).toBe(true);
    });

    it('resolves a second after the deadline when a worker never goes', async () => {
      const { worker: w, channel } = attached();
      fleet.reserve(w, 'r1', 'm');
      lifecycle.beginShutdown();
      let done = false;
      void fleet.drainAll(2 * SECOND).then(() => (done = true));
      clock.advance(2 * SECOND);
      expect(events).toEqual([`drainExpired:${w.id}:server_shutdown`]);
      expect(channel.closedWith).toEqual([1000, 'graceful shutdown timed out']);
      await settled();
      expect(done).toBe(false);
      clock.advance(SECOND);
      await settled();
      expect(done).toBe(true);
    });
  });
});
