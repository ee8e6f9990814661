import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config';
import { CLOCK, Clock } from '../common/clock';
import { CancelReason, CloseCodes, CloseReasons, ModelCapabilities } from '../protocol';
import { WorkerRecords } from '../registry/worker-records.port';
import { MetricsService } from '../observability/metrics.service';
import { LifecycleState } from '../observability/lifecycle-state';
import { FleetEvent, FleetEventMap, FleetEvents } from './fleet-events';
import { reconcileLoad } from './load-report';
import { NameCordons } from './name-cordons';
import { ReleaseWatchers } from './release-watchers';
import { LeaseHost, SlotLease } from './slot-lease';
import { WorkerDirectory, WorkerIndex } from './worker-index';
import { WorkerSession } from './worker-session';
import { WorkerSnapshot } from './worker-snapshot';

/** What a worker's `models_update` changes (already sanitized). */
export interface WorkerModelsUpdate {
  models: string[];
  capabilities?: Record<string, ModelCapabilities>;
  endpoints?: string[];
  priority?: number;
  currentLoad?: number;
}

/**
 * The workers connected to this process: their sessions, slots and drains. The only way a request
 * gets a worker is `reserve(snapshot)` → SlotLease. Routing and the queue read `directory`
 * (snapshots); what happens to workers is announced as events (`slotFreed`, `workerGone`,
 * `modelsChanged`, …): the Fleet never calls into the modules above it. Synchronous, in memory.
 */
@Injectable()
export class Fleet implements LeaseHost {
  /** Sessions by id, provider and model (local). */
  readonly sessions = new WorkerIndex();
  /** The same workers as routing and operators read them. */
  readonly directory: WorkerDirectory = this.sessions;
  /** Worker names an operator drained until undrain. */
  readonly cordons = new NameCordons();
  private readonly events = new FleetEvents();
  private readonly watchers = new ReleaseWatchers();
  private shutdownWaiters: Array<() => void> = [];
  /** Workers connected to this process (the index also holds other replicas' workers in cluster mode). */
  private localCount = 0;
  /**
   * Cluster mode: told when a local worker's snapshot changed (its load, models, drain), so its
   * replica can publish it. Unset in one process: the hot path pays one undefined check.
   */
  onLocalChange: ((worker: WorkerSession) => void) | undefined;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(CLOCK) private readonly clock: Clock,
    private readonly records: WorkerRecords,
    private readonly metrics: MetricsService,
    private readonly lifecycle: LifecycleState,
  ) {}

  on<E extends FleetEvent>(event: E, listener: (e: FleetEventMap[E]) => void): void {
    this.events.on(event, listener);
  }

  /** Shutdown has begun: no new work, and workers that register now are drained at once. */
  get closing(): boolean {
    return this.lifecycle.isShuttingDown;
  }

  // ---------------------------------------------------------------- workers arriving and leaving

  attach(worker: WorkerSession): void {
    worker.replica = this.config.cluster.redisUrl ? this.config.cluster.replicaId : this.config.instanceId;
    this.events.emit('workerJoined', { worker });
    this.sessions.add(worker);
    this.localCount++;
    this.records.recordConnected({
      id: worker.id,
      provider: worker.provider,
      name: worker.name,
      models: worker.advertisedModels(),
      maxConcurrent: worker.maxConcurrent,
      remoteAddress: worker.remoteAddress,
      connectedAt: worker.connectedAt,
    });
    this.metrics.setWorkersConnected(worker.provider, this.localOf(worker.provider));
    if (this.closing) {
      // Registered after shutdown began: it gets no work and leaves like everyone else.
      this.drain(worker, this.config.shutdownDrainTimeoutMs, 'server_shutdown', 'server_shutdown');
      return;
    }
    this.offer(worker);
  }

  /** The worker's connection is gone: its leases lapse and `workerGone` hands their requests back. */
  detach(worker: WorkerSession): void {
    if (!this.sessions.remove(worker)) return;
    if (!worker.remote) {
      this.localCount--;
      this.records.recordDisconnected(worker.id, this.clock.now());
    }
    if (worker.drainTimer) this.clock.clearTimeout(worker.drainTimer);
    for (const slot of worker.held.values()) slot.stopTimer();
    worker.held.clear();
    const orphans = [...worker.assigned.values()];
    for (const lease of orphans) lease.lapse();
    worker.assigned.clear();
    this.events.emit('workerGone', { worker, orphans });
    this.watchers.forget(worker.id);
    if (worker.remote) return;
    this.metrics.setWorkersConnected(worker.provider, this.localOf(worker.provider));
    if (this.closing && this.localCount === 0) {
      const waiters = this.shutdownWaiters;
      this.shutdownWaiters = [];
      for (const w of waiters) w();
    }
  }

  /** Workers of a provider connected to this process (gauges count only these: each replica counts its own). */
  localOf(provider: string): number {
    let n = 0;
    for (const w of this.sessions.ofProvider(provider)) if (!w.remote) n++;
    return n;
  }

  // ---------------------------------------------------------------- slots

  /** A slot on the worker behind `snapshot` for one request, or null when it has none free (or is gone). */
  reserve(snapshot: WorkerSnapshot, requestId: string, model: string): SlotLease | null {
    const worker = this.sessions.get(snapshot.id);
    if (!worker || worker.freeSlots <= 0) return null;
    const lease = new SlotLease(worker, this, requestId, model, ++worker.sentSeq);
    worker.assigned.set(requestId, lease);
    worker.deferUntil = 0;
    if (this.onLocalChange !== undefined) this.touched(worker);
    return lease;
  }

  /** The worker ended a request it was cancelled for (completion or error): its held slot is free. */
  confirmCancelled(worker: WorkerSession, requestId: string): boolean {
    if (!worker.held.has(requestId)) return false;
    this.releaseHeld(worker, requestId);
    return true;
  }

  released(worker: WorkerSession): void {
    this.watchers.notify(worker.id);
    if (this.onLocalChange !== undefined) this.touched(worker);
  }

  hold(worker: WorkerSession, requestId: string, sentSeq: number): void {
    const timer = this.clock.setTimeout(() => this.releaseHeld(worker, requestId), this.config.cancelGraceMs);
    worker.held.set(requestId, { stopTimer: () => this.clock.clearTimeout(timer), sentSeq });
  }

  slotFreed(worker: WorkerSession): void {
    if (worker.draining) {
      if (worker.assigned.size === 0 && worker.drainTimer) {
        this.clock.clearTimeout(worker.drainTimer);
        worker.drainTimer = undefined;
        worker.channel.close(CloseCodes.NORMAL, CloseReasons.DRAIN_COMPLETE);
      }
      return;
    }
    this.offer(worker);
  }

  /** Something the worker may serve became routable (a hold lifted, a provider changed): it may take queued work. */
  offer(worker: WorkerSession): void {
    if (worker.draining || this.sessions.get(worker.id) !== worker) return;
    this.events.emit('slotFreed', { worker });
  }

  /** Requests for `model` the worker is working on (admin work: scans that worker's leases). */
  inFlightFor(worker: WorkerSession, model: string): number {
    let n = 0;
    for (const lease of worker.assigned.values()) if (lease.model === model) n++;
    return n;
  }

  /** Calls `listener` each time a request leaves `worker` (answered, failed or cancelled) until the returned function is called. */
  watchReleases(worker: WorkerSession, listener: () => void): () => void {
    return this.watchers.watch(worker.id, listener);
  }

  // ---------------------------------------------------------------- what workers report

  /**
   * `pong` carries the worker's own count of active requests, as of the ping it answers; a
   * `models_update` (`fromPing` false) carries one of unknown age, so it frees no held slot.
   */
  onPong(worker: WorkerSession, currentLoad: number, fromPing = true): void {
    this.records.recordHeartbeat(worker.id, this.clock.now());
    const mark = fromPing ? worker.takePingMark() : undefined;
    const before = worker.load;
    reconcileLoad(worker, currentLoad, mark, (id) => this.forgetHeld(worker, id));
    if (this.onLocalChange !== undefined && worker.load !== before) this.touched(worker);
    this.slotFreed(worker);
  }

  /** A `models_update`: new models and hints, then the reported load (which may free slots). */
  onModelsChanged(worker: WorkerSession, update: WorkerModelsUpdate): void {
    const before = worker.models;
    this.sessions.setModels(worker, update.models);
    const dropped = worker.wildcard ? [] : [...before].filter((m) => !worker.models.has(m));
    if (update.capabilities) worker.capabilities = update.capabilities;
    if (update.endpoints) worker.endpoints = new Set(update.endpoints);
    if (update.priority !== undefined) worker.declaredPriority = update.priority;
    this.records.recordModels(worker.id, worker.advertisedModels());
    this.touched(worker);
    this.events.emit('modelsChanged', { worker, dropped });
    if (update.currentLoad !== undefined) this.onPong(worker, update.currentLoad, false);
    else this.offer(worker);
  }

  /** Asks a worker to re-read its backend's models; it answers with `models_update`. */
  requestModelsRefresh(worker: WorkerSession, reason: string): void {
    worker.channel.send({ type: 'models_refresh', reason });
  }

  /** Takes `model` out of routing on `worker` while an unload drains it. */
  holdOut(worker: WorkerSession, model: string): void {
    this.sessions.holdOut(worker, model);
    this.touched(worker);
  }

  /** Puts held-out models back into routing; the worker may then take queued requests for them. */
  releaseHolds(worker: WorkerSession, models: readonly string[]): void {
    for (const model of models) this.sessions.releaseHold(worker, model);
    this.touched(worker);
    this.offer(worker);
  }

  // ---------------------------------------------------------------- drains

  /** Asks a worker to finish its work and leave; at the deadline its remaining work fails (`drainExpired`). */
  drain(worker: WorkerSession, timeoutMs: number, reason: string, cancelReason: CancelReason = 'graceful_shutdown'): void {
    // Another replica's worker is drained by its own replica (cordons reach every replica).
    if (worker.draining || worker.remote || this.sessions.get(worker.id) !== worker) return;
    worker.draining = true;
    this.touched(worker);
    worker.channel.send({ type: 'graceful_shutdown', reason, drain_timeout_secs: Math.max(1, Math.ceil(timeoutMs / 1000)) });
    if (worker.assigned.size === 0) {
      worker.channel.close(CloseCodes.NORMAL, CloseReasons.DRAIN_COMPLETE);
      return;
    }
    worker.drainTimer = this.clock.setTimeout(() => {
      worker.drainTimer = undefined;
      this.events.emit('drainExpired', { worker, reason: cancelReason });
      worker.channel.close(CloseCodes.NORMAL, CloseReasons.DRAIN_TIMED_OUT);
    }, timeoutMs);
  }

  /** Closes a worker at once (its provider was deleted): no new work, the link's close detaches it. */
  evict(worker: WorkerSession): void {
    if (worker.remote) return;
    worker.draining = true;
    this.touched(worker);
    worker.channel.close(CloseCodes.NORMAL, CloseReasons.DRAIN_COMPLETE);
  }

  /** Drains a cordoned pool's workers; requests waiting for the pool are routed again (`poolDrained`). */
  drainPool(provider: string, timeoutMs: number, reason: string): void {
    for (const w of [...this.sessions.ofProvider(provider)]) this.drain(w, timeoutMs, reason);
    this.events.emit('poolDrained', { provider });
  }

  /**
   * Gateway shutdown: waiting requests are answered (`closing`), then every worker is drained;
   * resolves once all are gone or the deadline (plus a second) passed.
   */
  async drainAll(timeoutMs: number, pending?: () => boolean): Promise<void> {
    const deadline = this.clock.now() + timeoutMs;
    this.events.emit('closing', {});
    if (this.localCount > 0) {
      const allGone = new Promise<void>((resolve) => this.shutdownWaiters.push(resolve));
      for (const w of [...this.sessions.all()]) this.drain(w, timeoutMs, 'server_shutdown', 'server_shutdown');
      // Workers that never acknowledge the close still must not hold the process.
      const grace = new Promise<void>((resolve) => this.clock.setTimeout(resolve, timeoutMs + 1000));
      await Promise.race([allGone, grace]);
    }
    // Cluster mode: requests this replica's clients sent to other replicas' workers finish too, and
    // `pending` (requests still waiting for one) empties.
    const busy = () => pending?.() || [...this.sessions.all()].some((w) => w.remote && w.assigned.size > 0);
    while (busy() && this.clock.now() < deadline) await new Promise<void>((resolve) => this.clock.setTimeout(resolve, 50));
    this.events.emit('drained', {});
  }

  // ---------------------------------------------------------------- internals

  private releaseHeld(worker: WorkerSession, requestId: string): void {
    if (this.forgetHeld(worker, requestId)) this.slotFreed(worker);
  }

  /** Drops a held slot (and its grace timer); true if there was one. */
  private forgetHeld(worker: WorkerSession, requestId: string): boolean {
    const slot = worker.held.get(requestId);
    if (!slot) return false;
    slot.stopTimer();
    worker.held.delete(requestId);
    worker.retireCancelled(requestId);
    if (this.onLocalChange !== undefined) this.touched(worker);
    return true;
  }

  private touched(worker: WorkerSession): void {
    if (this.onLocalChange !== undefined && !worker.remote) this.onLocalChange(worker);
  }
}
