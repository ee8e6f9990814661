import { Inject, Injectable, Logger, OnApplicationBootstrap, Optional } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config';
import { CLOCK, Clock } from '../common/clock';
import { Errors, GatewayError, isRetriable, statusOf } from '../common/gateway-error';
import { CancelReason, CloseCodes, CloseReasons, EXTENDED_CANCEL_REASONS, Features, ModelCapabilities, ResponseCompleteMessage, ResponseStartMessage, TokenCounts } from '../protocol';
import { LiveWorker } from '../registry/live-worker';
import { WorkerRegistry } from '../registry/worker-registry.service';
import { WorkerRecords } from '../registry/worker-records.port';
import { Provider, ProvidersService } from '../providers/providers.service';
import { PoolStats } from '../providers/pool-stats';
import { AdmissionQueue } from '../queue/admission-queue';
import { Router } from '../routing/router.service';
import { MetricsService } from '../observability/metrics.service';
import { LifecycleState } from '../observability/lifecycle-state';
import { RelayRequest } from './relay-request';
import { NO_USAGE_RECORDS, UsageRecorder } from '../usage/usage-recorder.port';
import { usageRecordOf } from '../usage/usage-record';
import { readCacheHeaders } from '../usage/cache-headers';
import { ClientBuffers } from './client-buffers';
import { reconcileLoad } from './load-report';

/** What a worker's `models_update` changes (already sanitized). */
export interface WorkerModelsUpdate {
  models: string[];
  capabilities?: Record<string, ModelCapabilities>;
  endpoints?: string[];
  priority?: number;
  currentLoad?: number;
}

/** What a frame handler learns: `unknown` means the worker spoke about a request it never had. */
export type FrameVerdict = 'ok' | 'unknown';

/** Worker `error` code meaning the backend could not be reached: nothing was processed. */
const BACKEND_UNAVAILABLE = 'backend_unavailable';

/** HTTP status recorded for requests whose client left before an answer. */
const CLIENT_CLOSED = 499;

/**
 * A request's life: reserve a worker slot or queue → send → collect chunks/completion →
 * complete, cancel, requeue or fail. All state is in memory; nothing here awaits.
 */
@Injectable()
export class Dispatcher implements OnApplicationBootstrap {
  private readonly log = new Logger('Dispatcher');
  private shutdownWaiters: Array<() => void> = [];
  /** Listeners of requests leaving a worker (model unloads wait on them); empty on the usual path. */
  private readonly releaseWatchers = new Map<LiveWorker, Set<() => void>>();
  private readonly detachListeners: Array<(worker: LiveWorker) => void> = [];
  private readonly modelsListeners: Array<(worker: LiveWorker) => void> = [];
  /** Response bytes held for clients (per-client backlogs, collected bodies) and their bounds. */
  readonly buffers: ClientBuffers;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(CLOCK) private readonly clock: Clock,
    private readonly providers: ProvidersService,
    private readonly registry: WorkerRegistry,
    private readonly queue: AdmissionQueue<RelayRequest>,
    private readonly router: Router,
    private readonly records: WorkerRecords,
    private readonly metrics: MetricsService,
    private readonly lifecycle: LifecycleState,
    @Optional() private readonly usage: UsageRecorder = NO_USAGE_RECORDS,
    @Optional() private readonly poolStats: PoolStats = new PoolStats(clock),
  ) {
    this.buffers = new ClientBuffers(config, clock, (req) => this.tooSlow(req));
    providers.onDeleted((p) => this.onProviderDeleted(p));
    // New capabilities, priority or enabling may make idle workers eligible for queued requests.
    providers.onChanged((p) => {
      for (const w of [...this.registry.ofProvider(p.name)]) this.pullWork(w);
    });
    router.onWorkerReady((w) => this.pullWork(w));
    metrics.collectSlotsWith(() => this.collectSlotGauges());
  }

  /** Every provider's gauges exist from the start, so dashboards and alerts see zeros, not gaps. */
  onApplicationBootstrap(): void {
    for (const p of this.providers.list()) {
      this.metrics.setQueueDepth(p.name, this.queue.depth(p.name));
      this.metrics.setWorkersConnected(p.name, this.registry.ofProvider(p.name).size);
    }
  }

  // ---------------------------------------------------------------- client side

  /** Accepts a client request; the sink receives exactly one terminal outcome. */
  submit(req: RelayRequest): void {
    const now = this.clock.now();
    req.receivedAt = now;
    if (this.lifecycle.isShuttingDown) return this.reject(req, Errors.serverShutdown());
    // Clients' unread answers fill the buffer budget: new work waits until they drain (or are cut off).
    if (this.buffers.full) return this.reject(req, Errors.gatewayOverloaded());
    const plan = this.router.plan(req.route);
    if (plan instanceof GatewayError) return this.reject(req, plan);
    req.plan = plan;
    this.dispatch(req, false);
  }

  /** Routes a new or requeued request: to a free worker, into the queue, or to its error. */
  private dispatch(req: RelayRequest, requeued: boolean): void {
    const decision = this.router.route(req.plan);
    if (decision.kind === 'reject') return requeued ? this.fail(req, decision.error) : this.reject(req, decision.error);
    if (!requeued) {
      req.provider = decision.kind === 'assign' ? this.providers.get(decision.worker.provider)! : decision.provider;
      if (req.timeouts?.runMs === undefined) req.deadline = req.receivedAt + req.provider.requestTimeoutMs;
      // Its own run bound starts when a worker first takes it (see assign); a reroute keeps it.
      else if (!req.assignedAt) req.deadline = Infinity;
    }
    if (decision.kind === 'assign') this.assign(req, decision.worker, decision.model);
    else this.enqueue(req, decision.model, requeued);
  }

  /** The client's connection closed before its response finished. */
  clientGone(req: RelayRequest): void {
    this.cancel(req, 'client_disconnect');
  }

  /**
   * Ends a request wherever it is: out of the queue, or `cancel` to its worker (whose slot stays
   * held as for every cancel). Without `error` it is settled as abandoned by its client and its
   * sink hears nothing more; with one, the sink gets that error. False if it had already ended.
   */
  cancel(req: RelayRequest, reason: CancelReason, error?: GatewayError): boolean {
    switch (req.phase) {
      case 'queued':
        // Not submitted yet (an async admission check was running): it is recorded all the same.
        if (!req.provider) {
          if (!req.receivedAt) req.receivedAt = this.clock.now();
          break;
        }
        this.queue.remove(req);
        this.metrics.setQueueDepth(req.provider.name, this.queue.depth(req.provider.name));
        break;
      case 'assigned':
      case 'streaming':
        this.cancelOnWorker(req, reason);
        break;
      case 'finished':
        return false;
    }
    this.metrics.cancellation(reason);
    if (error) this.fail(req, error);
    else this.settle(req, CLIENT_CLOSED);
    return true;
  }

  /** Queues a request; requeued ones bypass the bound, they were already admitted. */
  private enqueue(req: RelayRequest, model: string, requeued: boolean): void {
    const p = req.provider;
    req.targetModel = model;
    const now = this.clock.now();
    if (requeued) this.queue.requeue(req);
    else {
      const admitted = this.queue.admit(req, p.maxQueueLen, req.maxQueued);
      if (admitted !== 'admitted') return this.reject(req, this.queueFull(req, admitted === 'tenant_full', now));
    }
    req.phase = 'queued';
    req.queuedAt = now;
    req.queuePosition = this.queue.depth(p.name);
    this.log.debug({ msg: 'request queued', correlation_id: req.correlationId, request_id: req.id, pool: p.name, model, tenant: req.tenant, priority: req.priority, queue_position: req.queuePosition });
    // A requeued request waits at most one more queue timeout, never past its lifetime.
    const waitUntil = Math.min(req.deadline, now + (req.timeouts?.queueMs ?? p.queueTimeoutMs));
    req.timer = this.clock.setTimeout(() => this.onQueueTimeout(req), Math.max(0, waitUntil - now));
    this.metrics.setQueueDepth(p.name, this.queue.depth(p.name));
  }

  /** 429 with a retry hint from the queue's observed drain rate. */
  private queueFull(req: RelayRequest, tenantShare: boolean, now: number): GatewayError {
    const provider = req.provider.name;
    const ahead = tenantShare ? this.queue.tenantDepth(req.tenant) : this.queue.depth(provider);
    return Errors.queueFull(this.queue.stats.retryAfterMs(provider, ahead + 1, now), this.queue.depth(provider), this.queue.stats.avgWaitMs(provider), tenantShare);
  }

  /**
   * The request leaves the queue (for a worker, a timeout or its client leaving). A reroute to
   * another queue or model passes `record: false`: the wait is carried on and recorded once, when
   * the request next leaves a queue or reaches a worker.
   */
  private leaveQueue(req: RelayRequest, now: number, record = true): void {
    if (!req.queuedAt) return;
    const waited = now - req.queuedAt;
    req.waitedMs += waited;
    req.unrecordedWaitMs += waited;
    req.queuedAt = 0;
    req.sink.queueWaited(req.waitedMs);
    if (record) this.recordWait(req);
  }

  private recordWait(req: RelayRequest): void {
    this.metrics.queueWait(req.provider.name, req.unrecordedWaitMs / 1000);
    req.unrecordedWaitMs = 0;
    req.waitRecorded = true;
  }

  private onQueueTimeout(req: RelayRequest): void {
    if (req.phase !== 'queued') return;
    this.queue.remove(req);
    this.leaveQueue(req, this.clock.now());
    this.metrics.setQueueDepth(req.provider.name, this.queue.depth(req.provider.name));
    const lifetimeOver = this.clock.now() >= req.deadline;
    this.metrics.cancellation('timeout');
    this.fail(req, lifetimeOver ? Errors.requestTimeout() : Errors.queueTimeout());
  }

  private assign(req: RelayRequest, worker: LiveWorker, model: string): void {
    const now = this.clock.now();
    this.clearTimer(req);
    if (req.queuedAt) {
      this.queue.stats.departed(req.provider.name, now - req.queuedAt, now);
      this.leaveQueue(req, now);
    } else if (req.unrecordedWaitMs > 0 || (req.requeues === 0 && !req.waitRecorded)) {
      // Dispatched at once: a zero wait, so the histogram's percentiles cover every request (a
      // rerouted one records the wait it carried, once; one queued before recorded it on leaving).
      this.recordWait(req);
    }
    const runMs = req.timeouts?.runMs;
    if (runMs !== undefined && !req.assignedAt) req.deadline = now + runMs;
    req.phase = 'assigned';
    req.worker = worker;
    req.targetModel = model;
    req.assignedAt = now;
    worker.assigned.set(req.id, req);
    req.sentSeq = ++worker.sentSeq;
    req.timer = this.clock.setTimeout(() => this.onRequestTimeout(req), Math.max(0, req.deadline - now));
    req.sink.routed(model, model === req.plan.target ? undefined : req.model);
    this.log.debug({ msg: 'request placed', correlation_id: req.correlationId, request_id: req.id, pool: worker.provider, worker_id: worker.id, worker_name: worker.name, model, queue_wait_ms: req.waitedMs });
    worker.channel.send({
      type: 'request',
      request_id: req.id,
      model,
      endpoint_path: req.endpointPath,
      is_streaming: req.isStreaming,
      body: req.bodyFor(model),
      headers: req.headers,
    });
  }

  private onRequestTimeout(req: RelayRequest): void {
    if (req.phase !== 'assigned' && req.phase !== 'streaming') return;
    this.metrics.cancellation('timeout');
    this.cancelOnWorker(req, 'timeout');
    this.fail(req, Errors.requestTimeout());
  }

  /**
   * Sends exactly one `cancel` and keeps the slot held: the worker is still busy until it
   * completes the request, reports a lower load, or the grace period ends.
   */
  private cancelOnWorker(req: RelayRequest, reason: CancelReason): void {
    const worker = req.worker;
    if (!worker || !worker.assigned.delete(req.id)) return;
    // Reasons beyond the six every worker knows go only to workers that negotiated them.
    this.notifyReleased(worker);
    const wire = (EXTENDED_CANCEL_REASONS as readonly string[]).includes(reason) && !worker.features.has(Features.CANCEL_REASONS) ? 'client_disconnect' : reason;
    worker.channel.send({ type: 'cancel', request_id: req.id, reason: wire });
    this.log.debug({ msg: 'cancel sent', request_id: req.id, reason, wire_reason: wire, worker_id: worker.id, correlation_id: req.correlationId });
    const timer = this.clock.setTimeout(() => this.releaseHeld(worker, req.id), this.config.cancelGraceMs);
    worker.held.set(req.id, { stopTimer: () => this.clock.clearTimeout(timer), sentSeq: req.sentSeq });
  }

  private releaseHeld(worker: LiveWorker, requestId: string): void {
    if (this.forgetHeld(worker, requestId)) this.afterSlotFreed(worker);
  }

  /** Drops a held slot (and its grace timer); true if there was one. */
  private forgetHeld(worker: LiveWorker, requestId: string): boolean {
    const slot = worker.held.get(requestId);
    if (!slot) return false;
    slot.stopTimer();
    worker.held.delete(requestId);
    worker.retireCancelled(requestId);
    return true;
  }

  // ---------------------------------------------------------------- worker side

  attachWorker(worker: LiveWorker): void {
    this.router.attach(worker);
    this.registry.add(worker);
    this.records.recordConnected({
      id: worker.id,
      provider: worker.provider,
      name: worker.name,
      models: worker.advertisedModels(),
      maxConcurrent: worker.maxConcurrent,
      remoteAddress: worker.remoteAddress,
      connectedAt: worker.connectedAt,
    });
    this.metrics.setWorkersConnected(worker.provider, this.registry.ofProvider(worker.provider).size);
    if (this.lifecycle.isShuttingDown) {
      // Registered after shutdown began: it gets no work and leaves like everyone else.
      this.drainWorker(worker, this.config.shutdownDrainTimeoutMs, 'server_shutdown', 'server_shutdown');
      return;
    }
    this.pullWork(worker);
  }

  /** The worker's connection is gone: requeue what can be requeued, fail the rest. */
  detachWorker(worker: LiveWorker): void {
    if (!this.registry.remove(worker)) return;
    this.router.detach(worker);
    const now = this.clock.now();
    this.records.recordDisconnected(worker.id, now);
    if (worker.drainTimer) this.clock.clearTimeout(worker.drainTimer);
    for (const slot of worker.held.values()) slot.stopTimer();
    worker.held.clear();
    // Oldest first, so the earliest arrival gets the first free slot elsewhere.
    const orphans = ([...worker.assigned.values()] as RelayRequest[]).sort((a, b) => a.receivedAt - b.receivedAt);
    worker.assigned.clear();
    if (orphans.some((req) => req.streamedBytes === 0)) this.router.failed(worker, 'disconnect');
    for (const req of orphans) this.rescue(req);
    this.replanWaitingFor(worker.wildcard ? [...this.queue.waitingModels()] : [...worker.models]);
    this.metrics.setWorkersConnected(worker.provider, this.registry.ofProvider(worker.provider).size);
    this.releaseWatchers.delete(worker);
    for (const listener of this.detachListeners) listener(worker);
    if (this.lifecycle.isShuttingDown && this.registry.count() === 0) this.notifyShutdownWaiters();
  }

  /** Called once a worker's connection is gone and its requests were requeued or failed. */
  onDetached(listener: (worker: LiveWorker) => void): void {
    this.detachListeners.push(listener);
  }

  /** Called on each `models_update`, once the worker's new models are in place and before it pulls work. */
  onModelsUpdated(listener: (worker: LiveWorker) => void): void {
    this.modelsListeners.push(listener);
  }

  /** Requests for `model` the worker is working on (admin work: scans that worker's requests). */
  inFlightFor(worker: LiveWorker, model: string): number {
    let n = 0;
    for (const req of worker.assigned.values()) if ((req as RelayRequest).targetModel === model) n++;
    return n;
  }

  /** Calls `listener` each time a request leaves `worker` (answered, failed or cancelled) until the returned function is called. */
  watchReleases(worker: LiveWorker, listener: () => void): () => void {
    let set = this.releaseWatchers.get(worker);
    if (!set) this.releaseWatchers.set(worker, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.releaseWatchers.get(worker) === set) this.releaseWatchers.delete(worker);
    };
  }

  private notifyReleased(worker: LiveWorker): void {
    if (this.releaseWatchers.size === 0) return;
    const set = this.releaseWatchers.get(worker);
    if (set) for (const listener of [...set]) listener();
  }

  private rescue(req: RelayRequest): void {
    this.clearTimer(req);
    req.worker = undefined;
    if (req.sink.clientGone) return this.settle(req, CLIENT_CLOSED);
    if (req.started) return this.fail(req, Errors.workerDisconnected());
    if (this.providers.get(req.provider.name) !== req.provider) return this.fail(req, Errors.providerDeleted());
    if (req.requeues >= this.config.maxRequeues) return this.fail(req, Errors.requeueExhausted());
    req.requeues++;
    this.buffers.dropBody(req);
    req.streamedBytes = 0;
    this.metrics.requeue(req.provider.name);
    if (this.lifecycle.isShuttingDown) return this.fail(req, Errors.serverShutdown());
    this.dispatch(req, true);
  }

  /**
   * A worker left (or stopped advertising models): requests waiting for a model that now has no
   * worker at all, and that have a fallback chain, are routed again (a fallback's idle workers take
   * them, or its queue does); those no other candidate can take keep waiting for their model.
   */
  private replanWaitingFor(models: readonly string[]): void {
    if (this.queue.totalDepth() === 0) return;
    for (const model of models) {
      if (this.registry.servingExactly(model).size > 0) continue;
      for (const req of this.queue.waitingFor(model)) {
        if (req.plan.candidates.length < 2) continue;
        const decision = this.router.route(req.plan);
        if (decision.kind === 'reject' || decision.model === model) continue;
        this.queue.remove(req);
        this.metrics.setQueueDepth(req.provider.name, this.queue.depth(req.provider.name));
        this.log.debug({ msg: 'queued request re-planned', request_id: req.id, correlation_id: req.correlationId, from_model: model, to_model: decision.model });
        if (decision.kind === 'assign') {
          // Like the queue branch: the wait is carried on (recorded once, on assignment) and the
          // request now belongs to the fallback's provider (metrics, usage, provider deletion).
          this.clearTimer(req);
          this.leaveQueue(req, this.clock.now(), false);
          req.provider = this.providers.get(decision.worker.provider) ?? req.provider;
          this.assign(req, decision.worker, decision.model);
          continue;
        }
        // It was admitted already: it moves to the fallback's queue without its bound, wait carried on.
        this.clearTimer(req);
        this.leaveQueue(req, this.clock.now(), false);
        req.provider = decision.provider;
        this.enqueue(req, decision.model, true);
      }
    }
  }

  onChunk(worker: LiveWorker, requestId: string, chunk: string): FrameVerdict {
    const req = worker.assigned.get(requestId) as RelayRequest | undefined;
    if (!req) return this.lateFrame(worker, requestId);
    if (req.streamedBytes === 0) this.firstByte(req, worker);
    const bytes = Buffer.byteLength(chunk);
    req.streamedBytes += bytes;
    if (req.streamedBytes > this.config.maxStreamBytes) {
      this.metrics.cancellation('stream_too_large');
      this.cancelOnWorker(req, 'stream_too_large');
      this.fail(req, Errors.streamTooLarge());
      return 'ok';
    }
    if (!req.isStreaming) {
      const over = this.buffers.overCeiling(req, bytes);
      if (over) return this.overCeiling(req, over);
      this.buffers.collect(req, chunk, bytes);
      return 'ok';
    }
    if (req.phase !== 'streaming') {
      req.phase = 'streaming';
      req.sink.startStream();
    }
    // Its own backlog is full: only this request ends; the worker's other streams never wait.
    if (!this.buffers.write(req, chunk, bytes)) this.tooSlow(req);
    return 'ok';
  }

  /** Negotiated `response_start`: the stream begins now, with the backend's status and headers. */
  onResponseStart(worker: LiveWorker, msg: ResponseStartMessage): FrameVerdict {
    const req = worker.assigned.get(msg.request_id) as RelayRequest | undefined;
    if (!req) return this.lateFrame(worker, msg.request_id);
    if (!req.isStreaming || req.phase !== 'assigned' || msg.status_code < 200) return 'ok';
    req.phase = 'streaming';
    req.sink.startStream(msg.status_code, msg.headers);
    return 'ok';
  }

  onComplete(worker: LiveWorker, msg: ResponseCompleteMessage): FrameVerdict {
    const req = worker.assigned.get(msg.request_id) as RelayRequest | undefined;
    if (!req) {
      if (worker.held.has(msg.request_id)) {
        this.releaseHeld(worker, msg.request_id);
        return 'ok';
      }
      return this.lateFrame(worker, msg.request_id);
    }
    this.release(worker, req);
    if (msg.token_counts) this.countTokens(req, msg.token_counts);
    req.tokenCounts = msg.token_counts;
    this.metrics.backendCache(worker.provider, req.targetModel, readCacheHeaders(msg.headers));
    if (req.streamedBytes === 0) {
      this.firstByte(req, worker);
      if (msg.status_code >= 500) this.router.failed(worker, `http_${msg.status_code}`);
      else this.router.succeeded(worker);
    } else this.router.succeeded(worker);
    if (req.phase === 'streaming') {
      // The stream's final status is what the worker reports (its backend's).
      this.settle(req, msg.status_code);
      req.sink.endStream();
    } else if (msg.status_code < 200) {
      // An interim (1xx) status is not an answer: relaying it would leave the client waiting.
      this.fail(req, Errors.workerError());
    } else {
      // A body the gateway cannot hold under its ceiling is not taken on (the slot is already free).
      const over = msg.body ? this.buffers.overCeiling(req, Buffer.byteLength(msg.body)) : undefined;
      if (over) {
        this.fail(req, over === 'request' ? Errors.streamTooLarge() : Errors.gatewayOverloaded());
        this.afterSlotFreed(worker);
        return 'ok';
      }
      // Collected chunks are handed over as they are: joining them would make a second copy.
      const body = msg.body ?? req.bufferedBody ?? '';
      this.settle(req, msg.status_code);
      req.sink.sendComplete(msg.status_code, msg.headers ?? {}, body);
      this.buffers.sent(req);
    }
    this.afterSlotFreed(worker);
    return 'ok';
  }

  onWorkerError(worker: LiveWorker, requestId: string, code: string): void {
    const req = worker.assigned.get(requestId) as RelayRequest | undefined;
    if (!req) {
      if (worker.held.has(requestId)) this.releaseHeld(worker, requestId);
      return;
    }
    this.log.warn({ msg: 'worker reported an error', worker_id: worker.id, request_id: requestId, code, correlation_id: req.correlationId });
    this.release(worker, req);
    const beforeFirstByte = req.streamedBytes === 0;
    if (beforeFirstByte) this.router.failed(worker, code);
    if (code === BACKEND_UNAVAILABLE && beforeFirstByte) {
      // Nothing reached the backend: another worker may serve it (counts toward the requeue limit).
      (req.plan.avoid ??= new Set()).add(worker.id);
      this.rescue(req);
    } else {
      this.fail(req, Errors.workerError());
    }
    this.afterSlotFreed(worker);
  }

  /**
   * `pong` carries the worker's own count of active requests, as of the ping it answers; a
   * `models_update` (`fromPing` false) carries one of unknown age, so it frees no held slot.
   */
  onPong(worker: LiveWorker, currentLoad: number, fromPing = true): void {
    this.records.recordHeartbeat(worker.id, this.clock.now());
    const mark = fromPing ? worker.takePingMark() : undefined;
    reconcileLoad(worker, currentLoad, mark, (id) => this.forgetHeld(worker, id));
    this.afterSlotFreed(worker);
  }

  /** Something the worker may serve became routable again (a model hold lifted): it takes queued requests it now may. */
  offerQueued(worker: LiveWorker): void {
    this.pullWork(worker);
  }

  /** Asks a worker to re-read its backend's models; it answers with `models_update`. */
  requestModelsRefresh(worker: LiveWorker, reason: string): void {
    worker.channel.send({ type: 'models_refresh', reason });
  }

  /** A `models_update`: new models and hints, then the reported load (which may free slots). */
  onModelsChanged(worker: LiveWorker, update: WorkerModelsUpdate): void {
    const before = worker.models;
    this.registry.setModels(worker, update.models);
    const dropped = worker.wildcard ? [] : [...before].filter((m) => !worker.models.has(m));
    if (update.capabilities) worker.capabilities = update.capabilities;
    if (update.endpoints) worker.endpoints = new Set(update.endpoints);
    if (update.priority !== undefined) worker.declaredPriority = update.priority;
    this.records.recordModels(worker.id, worker.advertisedModels());
    for (const listener of this.modelsListeners) listener(worker);
    if (dropped.length > 0) this.replanWaitingFor(dropped);
    if (update.currentLoad !== undefined) this.onPong(worker, update.currentLoad, false);
    else this.pullWork(worker);
  }

  /** Asks a worker to finish its work and leave; at the deadline its remaining work fails. */
  drainWorker(worker: LiveWorker, timeoutMs: number, reason: string, cancelReason: CancelReason = 'graceful_shutdown'): void {
    if (worker.draining || this.registry.get(worker.id) !== worker) return;
    worker.draining = true;
    worker.channel.send({
      type: 'graceful_shutdown',
      reason,
      drain_timeout_secs: Math.max(1, Math.ceil(timeoutMs / 1000)),
    });
    if (worker.assigned.size === 0) {
      worker.channel.close(CloseCodes.NORMAL, CloseReasons.DRAIN_COMPLETE);
      return;
    }
    worker.drainTimer = this.clock.setTimeout(() => {
      worker.drainTimer = undefined;
      this.failAssigned(worker, cancelReason, Errors.drainTimeout);
      worker.channel.close(CloseCodes.NORMAL, CloseReasons.DRAIN_TIMED_OUT);
    }, timeoutMs);
  }

  /**
   * Gateway shutdown: refuse new work, answer queued requests, drain every worker, and resolve
   * once all workers are gone (or the drain deadline has passed).
   */
  async shutdown(timeoutMs: number): Promise<void> {
    this.lifecycle.beginShutdown();
    for (const p of this.providers.list()) this.failQueued(p.name, Errors.serverShutdown);
    if (this.registry.count() === 0) return;
    const allGone = new Promise<void>((resolve) => this.shutdownWaiters.push(resolve));
    for (const w of [...this.registry.all()]) this.drainWorker(w, timeoutMs, 'server_shutdown', 'server_shutdown');
    // Workers that never acknowledge the close still must not hold the process.
    const grace = new Promise<void>((resolve) => this.clock.setTimeout(resolve, timeoutMs + 1000));
    await Promise.race([allGone, grace]);
  }

  private notifyShutdownWaiters(): void {
    const waiters = this.shutdownWaiters;
    this.shutdownWaiters = [];
    for (const w of waiters) w();
  }

  /**
   * A pool was cordoned: its queued requests are routed again as if they had just arrived — to
   * another pool's worker or queue, or to the router's verdict (`pool_unavailable`).
   */
  rerouteQueued(provider: string): void {
    const now = this.clock.now();
    for (const req of this.queue.discard(provider)) {
      this.clearTimer(req);
      this.leaveQueue(req, now, false);
      this.dispatch(req, false);
    }
    this.metrics.setQueueDepth(provider, this.queue.depth(provider));
  }

  private onProviderDeleted(provider: Provider): void {
    this.failQueued(provider.name, Errors.providerDeleted);
    for (const worker of [...this.registry.ofProvider(provider.name)]) {
      worker.draining = true;
      this.failAssigned(worker, 'graceful_shutdown', Errors.providerDeleted);
      worker.channel.close(CloseCodes.NORMAL, CloseReasons.DRAIN_COMPLETE);
    }
  }

  // ---------------------------------------------------------------- internals

  /** Ends every request waiting in a provider's queue with a fresh `error()`. */
  private failQueued(provider: string, error: () => GatewayError): void {
    for (const req of this.queue.discard(provider)) {
      this.clearTimer(req);
      this.fail(req, error());
    }
    this.metrics.setQueueDepth(provider, 0);
  }

  /** Cancels everything a worker runs (its slots stay held) and fails each request with `error()`. */
  private failAssigned(worker: LiveWorker, reason: CancelReason, error: () => GatewayError): void {
    for (const req of [...worker.assigned.values()] as RelayRequest[]) {
      this.cancelOnWorker(req, reason);
      this.fail(req, error());
    }
  }

  private lateFrame(worker: LiveWorker, requestId: string): FrameVerdict {
    return worker.isLate(requestId) ? 'ok' : 'unknown';
  }

  /** Frees the request's slot on its worker (the request itself is settled by the caller). */
  private release(worker: LiveWorker, req: RelayRequest): void {
    worker.assigned.delete(req.id);
    worker.retire(req.id);
    this.notifyReleased(worker);
  }

  private afterSlotFreed(worker: LiveWorker): void {
    if (worker.draining) {
      if (worker.assigned.size === 0 && worker.drainTimer) {
        this.clock.clearTimeout(worker.drainTimer);
        worker.drainTimer = undefined;
        worker.channel.close(CloseCodes.NORMAL, CloseReasons.DRAIN_COMPLETE);
      }
      return;
    }
    this.pullWork(worker);
  }

  /**
   * Pull path: a worker has free slots, so the oldest queued requests it may serve (same filters
   * as on arrival, whatever provider they were admitted at) are routed again by the strategy,
   * among every free eligible worker.
   */
  private pullWork(worker: LiveWorker): void {
    if (worker.draining || this.registry.get(worker.id) !== worker) return;
    while (worker.freeSlots > 0) {
      const req = this.queue.takeFor(worker, (r) => this.router.canServe(worker, r.plan, r.targetModel), this.clock.now());
      if (!req) return;
      this.assign(req, this.router.pick(req.plan, req.targetModel) ?? worker, req.targetModel);
      this.metrics.setQueueDepth(req.provider.name, this.queue.depth(req.provider.name));
    }
  }

  /**
   * Collecting this request's body would pass the buffer ceiling (see ClientBuffers.ceiling): it
   * alone ends — its worker is told to stop (`stream_too_large`, the one reason meaning "no more
   * of this response"), and its client hears why: `stream_too_large` when the answer alone is over
   * the ceiling, a retriable `gateway_overloaded` when other held answers fill it.
   */
  private overCeiling(req: RelayRequest, over: 'request' | 'total'): FrameVerdict {
    this.metrics.cancellation('stream_too_large');
    this.cancelOnWorker(req, 'stream_too_large');
    this.fail(req, over === 'request' ? Errors.streamTooLarge() : Errors.gatewayOverloaded());
    return 'ok';
  }

  /** The client's backlog stayed full (or has no room left): only its request ends. */
  private tooSlow(req: RelayRequest): void {
    if (req.phase !== 'streaming') return;
    this.metrics.cancellation('client_too_slow');
    this.cancelOnWorker(req, 'client_too_slow');
    this.fail(req, Errors.clientTooSlow());
  }

  private firstByte(req: RelayRequest, worker: LiveWorker): void {
    const now = this.clock.now();
    req.firstByteAt = now;
    this.metrics.timeToFirstByte(worker.provider, req.targetModel, (now - req.receivedAt) / 1000);
    this.router.firstByte(worker, now - req.assignedAt);
  }

  private countTokens(req: RelayRequest, counts: TokenCounts): void {
    const provider = req.provider.name;
    req.onTokens?.(counts.total_tokens ?? (counts.prompt_tokens ?? 0) + (counts.completion_tokens ?? 0));
    if (counts.prompt_tokens) this.metrics.tokens(provider, req.targetModel, req.tenant, 'prompt', counts.prompt_tokens);
    if (counts.completion_tokens) {
      this.metrics.tokens(provider, req.targetModel, req.tenant, 'completion', counts.completion_tokens);
    }
    this.poolStats.tokens(provider, counts.prompt_tokens ?? 0, counts.completion_tokens ?? 0);
  }

  /** Refuses a request before it runs (admission, routing, queue bounds): counted as a rejection. */
  reject(req: RelayRequest, error: GatewayError): void {
    if (req.phase === 'finished') return; // its client left during admission: recorded then
    if (!req.receivedAt) req.receivedAt = this.clock.now();
    this.metrics.rejection(error.code);
    this.poolStats.rejected(poolOf(req, error), error.code);
    this.fail(req, error);
  }

  private fail(req: RelayRequest, error: GatewayError): void {
    if (req.phase === 'finished') return;
    req.errorCode = error.code;
    this.settle(req, statusOf(error.code), error);
    if (!req.sink.clientGone) req.sink.fail(this.inContext(req, error));
  }

  /**
   * Adds what the client may act on: the pool and engine involved, and for every retriable
   * error a retry hint from the pool's current queue state.
   */
  private inContext(req: RelayRequest, error: GatewayError): GatewayError {
    const provider = req.provider?.name;
    if (!provider) return error;
    const fields: Record<string, unknown> = { pool_id: provider };
    const engine = req.worker?.runner?.type;
    if (engine) fields.engine = engine;
    const retryAfterMs = isRetriable(error.code) ? this.queue.stats.retryAfterMs(provider, this.queue.depth(provider) + 1, this.clock.now()) : undefined;
    return error.with({ retryAfterMs, fields });
  }

  /** Marks the request finished exactly once and records it. */
  private settle(req: RelayRequest, status: number, error?: GatewayError): void {
    this.clearTimer(req);
    // A collected body goes now; a client's unread backlog stays counted until it drains or leaves.
    this.buffers.dropBody(req);
    req.phase = 'finished';
    const now = this.clock.now();
    // A request no provider took names a model nobody serves: its name is not worth a series.
    this.metrics.requestFinished(
      { provider: req.provider?.name ?? 'none', model: req.targetModel || '(unrouted)', endpoint: req.endpointPath, status, tenant: req.tenant },
      (now - req.receivedAt) / 1000,
    );
    // Appended to a bounded buffer and written later, in batches: nothing here waits on the database.
    this.usage.record(usageRecordOf(req, status, now));
    this.poolStats.finished(poolOf(req, error), status, error?.code, req, error?.message);
  }

  private clearTimer(req: RelayRequest): void {
    if (req.timer) {
      this.clock.clearTimeout(req.timer);
      req.timer = undefined;
    }
  }

  /** Slot gauges are computed when metrics are scraped, not on every assignment. */
  private collectSlotGauges(): void {
    for (const p of this.providers.all()) {
      let busy = 0;
      let held = 0;
      let free = 0;
      for (const w of this.registry.ofProvider(p.name)) {
        busy += w.assigned.size;
        held += w.held.size;
        free += w.freeSlots;
      }
      this.metrics.setWorkerSlots(p.name, 'busy', busy);
      this.metrics.setWorkerSlots(p.name, 'held', held);
      this.metrics.setWorkerSlots(p.name, 'free', free);
    }
  }
}

/** The pool a finished request counts for: where it was admitted, else the pool its error names. */
function poolOf(req: RelayRequest, error?: GatewayError): string | undefined {
  if (req.provider) return req.provider.name;
  const named = error?.details.fields?.pool_id;
  return typeof named === 'string' ? named : undefined;
}
