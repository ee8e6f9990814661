import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config';
import { CLOCK, Clock } from '../common/clock';
import { Errors, GatewayError } from '../common/gateway-error';
import { CancelReason } from '../protocol';
import { Fleet } from '../fleet/fleet.service';
import { SlotLease } from '../fleet/slot-lease';
import { WorkerSnapshot } from '../fleet/worker-snapshot';
import { AdmissionQueue } from '../queue/admission-queue';
import { Router } from '../routing/router.service';
import { ClientBuffers } from './client-buffers';
import { DispatchLog } from './dispatch-log';
import { RequestObservers } from './observers/request-observers';
import { RelayRequest } from './relay-request';
import { CLIENT_CLOSED, RequestEnd } from './request-end';
import { LeaseControl, ResponseFrames } from './response-frames';
import { Watchdogs } from './watchdogs';
import { leaveQueue, recordWait } from './queue-waits';
import { ConcurrencyGate } from './concurrency-gate';
import { ConcurrencyCaps } from '../queue/concurrency-caps';
import { ClusterOrder } from './cluster-order';
import { Replanner } from './replanner';

export type { FrameVerdict } from './response-frames';

/**
 * A request's life: place it on a worker (a SlotLease from the Fleet) or in the queue → send →
 * collect (ResponseFrames) → complete, cancel, requeue or fail (RequestEnd). All state is in
 * memory; nothing here awaits. Workers' comings and goings arrive as Fleet events; requests
 * already waiting are routed again by the Replanner when what they wait for changes.
 */
@Injectable()
export class Dispatcher implements LeaseControl {
  private readonly log: DispatchLog;
  /** Response bytes held for clients (per-client backlogs, collected bodies) and their bounds. */
  readonly buffers: ClientBuffers;
  /** Worker frames about the requests they hold. */
  readonly frames: ResponseFrames;
  private readonly end: RequestEnd;
  /** `max_concurrent` of keys and tenants: requests over it wait in the queue. */
  private readonly gate: ConcurrencyGate;
  readonly caps: ConcurrencyCaps<RelayRequest>;
  /** First-byte and stall watchdogs over the requests on workers. */
  readonly watchdogs: Watchdogs;
  /** Requests on a worker, by id (their worker's frames name them). */
  private readonly onWorkers = new Map<string, RelayRequest>();
  /** Cluster mode: freed slots wait briefly for older requests of other replicas; a stopping replica still forwards. */
  private readonly order: ClusterOrder;
  /** Waiting requests routed again when what they wait for changes (pools, models, workers, caps). */
  private readonly replanner: Replanner;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(CLOCK) private readonly clock: Clock,
    private readonly router: Router,
    private readonly queue: AdmissionQueue<RelayRequest>,
    private readonly fleet: Fleet,
    private readonly observers: RequestObservers,
  ) {
    this.log = new DispatchLog(config.logLevel === 'debug' || config.logLevel === 'trace');
    this.buffers = new ClientBuffers(config, clock, (req) => this.frames.tooSlow(req));
    this.caps = queue.caps;
    this.gate = new ConcurrencyGate((req) => this.replanner.placeWaiting(req));
    this.end = new RequestEnd(clock, queue, this.buffers, observers, this.gate);
    this.watchdogs = new Watchdogs(config.routing, clock, router, this.end, observers, this);
    this.order = new ClusterOrder(
      config.cluster.redisUrl !== undefined,
      queue.elsewhere,
      clock,
      (w) => fleet.offer(w),
      () => {
        for (const w of fleet.sessions.all()) if (w.freeSlots > 0) fleet.offer(w);
      },
    );
    this.frames = new ResponseFrames(config, clock, router, fleet, this.buffers, this.end, observers, this, this.onWorkers, this.watchdogs);
    this.replanner = new Replanner(clock, router, queue, fleet, observers, this.log, this.gate, {
      dispatch: (req, requeued) => this.dispatch(req, requeued),
      assign: (req, worker, model) => this.assign(req, worker, model),
      enqueue: (req, model, requeued) => this.enqueue(req, model, requeued),
    });
    fleet.on('slotFreed', ({ worker }) => this.pullWork(worker));
    fleet.on('workerGone', ({ worker, orphans }) => this.onWorkerGone(worker, orphans));
    fleet.on('modelsChanged', ({ dropped }) => dropped.length > 0 && this.replanner.replanWaitingFor(dropped));
    fleet.on('drainExpired', ({ worker, reason }) => this.failLeases(worker.id, reason, Errors.drainTimeout));
    fleet.on('poolDrained', ({ provider }) => this.rerouteWaiting(provider));
    // Shutting down: waiting requests end (in cluster mode they keep waiting for other replicas' workers).
    fleet.on('closing', () => !this.order.clustered && this.failAllWaiting());
    // The drain is over: what still waits (cluster mode: for other replicas' workers) ends now.
    fleet.on('drained', () => this.failAllWaiting());
    router.onWorkerReady((w) => this.pullWork(w));
  }

  // ---------------------------------------------------------------- clients

  /** Accepts a client request; the sink receives exactly one terminal outcome. */
  submit(req: RelayRequest): void {
    req.receivedAt = this.clock.now();
    if (this.fleet.closing && !this.order.clustered) return this.reject(req, Errors.serverShutdown());
    // Clients' unread answers fill the buffer budget: new work waits until they drain (or are cut off).
    if (this.buffers.full) return this.reject(req, Errors.gatewayOverloaded());
    const plan = this.router.plan(req.route);
    if (plan instanceof GatewayError) return this.reject(req, plan);
    req.plan = plan;
    this.observers.submitted(req, req.receivedAt);
    this.dispatch(req, false);
  }

  /** Refuses a request before it runs (admission, routing, queue bounds): counted as a rejection. */
  reject(req: RelayRequest, error: GatewayError): void {
    this.end.reject(req, error);
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
        break;
      case 'assigned':
      case 'streaming':
        this.cancelLease(req, reason);
        break;
      case 'finished':
        return false;
    }
    this.observers.cancelled(reason);
    if (error) this.end.fail(req, error);
    else this.end.settle(req, CLIENT_CLOSED);
    return true;
  }

  // ---------------------------------------------------------------- operators' requests

  /** Ends every request waiting in a provider's queue with a fresh `error()`. */
  failWaiting(provider: string, error: () => GatewayError): void {
    for (const req of this.queue.discard(provider)) this.end.fail(req, error());
  }

  private failAllWaiting(): void {
    for (const provider of this.queue.waitingProviders()) this.failWaiting(provider, Errors.serverShutdown);
  }

  /** A pool was cordoned: its queued requests are routed again as if they had just arrived (see Replanner). */
  rerouteWaiting(provider: string): void {
    this.replanner.rerouteWaiting(provider);
  }

  /** Cancels everything a worker runs (its slots stay held) and fails each request with `error()`. */
  failLeases(workerId: string, reason: CancelReason, error: () => GatewayError): void {
    const worker = this.fleet.sessions.get(workerId);
    if (!worker) return;
    for (const lease of [...worker.assigned.values()]) {
      const req = this.onWorkers.get(lease.requestId);
      if (!req) continue;
      this.cancelLease(req, reason);
      this.end.fail(req, error());
    }
  }

  // ---------------------------------------------------------------- placing

  /** Routes a new or requeued request: to a free worker, into the queue, or to its error. */
  private dispatch(req: RelayRequest, requeued: boolean): void {
    let decision = this.router.route(req.plan);
    // Shutting down: nothing waits any more (cluster mode: it waits for other replicas' workers).
    if (decision.kind !== 'assign' && this.fleet.closing && !this.order.clustered) decision = { kind: 'reject', error: Errors.serverShutdown() };
    if (decision.kind === 'reject') {
      if (requeued) return this.end.fail(req, decision.error);
      // count_tokens without a tokenizer anywhere: the gateway's own estimate answers it.
      if (req.translator?.answerWithout?.(decision.error)) return this.end.settle(req, 200);
      return this.reject(req, decision.error);
    }
    // Routed by translation: the client's body must translate, or the request ends here (400).
    const untranslatable = req.plan.translated !== undefined ? req.translator?.prepare() : undefined;
    if (untranslatable) return requeued ? this.end.fail(req, untranslatable) : this.reject(req, untranslatable);
    if (!requeued) {
      req.provider = decision.kind === 'assign' ? this.router.provider(decision.worker.provider)! : decision.provider;
      if (req.timeouts?.runMs === undefined) req.deadline = req.receivedAt + req.provider.requestTimeoutMs;
      // Its own run bound starts when a worker first takes it (see assign); a reroute keeps it.
      else if (!req.assignedAt) req.deadline = Infinity;
    }
    // A key or tenant at its max_concurrent waits in the queue even when a worker is free. Nor does
    // it take a slot held for, or go ahead of, an older request of another replica (cluster mode).
    if (decision.kind === 'assign' && !this.gate.blocked(req) && !this.order.holds(decision.worker) && this.order.admits(decision.worker, req)) {
      this.assign(req, decision.worker, decision.model);
    } else this.enqueue(req, decision.model, requeued);
  }

  /** Queues a request; requeued ones bypass the bound, they were already admitted. */
  private enqueue(req: RelayRequest, model: string, requeued: boolean): void {
    const p = req.provider;
    req.targetModel = model;
    const now = this.clock.now();
    if (requeued) this.queue.requeue(req);
    else {
      const admitted = this.queue.admit(req, p.maxQueueLen, req.maxQueued);
      if (admitted !== 'admitted') return this.reject(req, this.queue.fullError(req, admitted === 'tenant_full'));
    }
    req.phase = 'queued';
    req.queuedAt = now;
    req.queuePosition = this.queue.depth(p.name);
    this.log.queued(req, p.name, model);
    // A requeued request waits at most one more queue timeout, never past its lifetime.
    const waitUntil = Math.min(req.deadline, now + (req.timeouts?.queueMs ?? p.queueTimeoutMs));
    this.queue.expireAfter(req, waitUntil - now, () => this.onQueueTimeout(req));
    this.gate.waits(req);
  }

  /** The queue already let go of it. */
  private onQueueTimeout(req: RelayRequest): void {
    if (req.phase !== 'queued') return;
    const now = this.clock.now();
    leaveQueue(this.observers, req, now);
    this.observers.cancelled('timeout');
    this.end.fail(req, now >= req.deadline ? Errors.requestTimeout() : Errors.queueTimeout());
  }

  private assign(req: RelayRequest, worker: WorkerSnapshot, model: string): void {
    if (this.gate.blocked(req)) return this.enqueue(req, model, true);
    const translator = req.plan.translated !== undefined ? req.translator : undefined;
    // A replan may have switched to translation after the request was queued natively.
    const untranslatable = translator?.prepare();
    if (untranslatable) return this.end.fail(req, untranslatable);
    const lease = this.fleet.reserve(worker, req.id, model);
    // Routing offers only workers with a free slot; should one be gone, the request waits its turn.
    if (!lease) return this.enqueue(req, model, true);
    const now = this.clock.now();
    this.end.clearTimer(req);
    if (req.queuedAt) {
      this.queue.stats.departed(req.provider.name, now - req.queuedAt, now);
      leaveQueue(this.observers, req, now);
    } else if (req.unrecordedWaitMs > 0 || (req.requeues === 0 && !req.waitRecorded)) {
      // Dispatched at once: a zero wait, so the histogram's percentiles cover every request (a
      // rerouted one records the wait it carried, once; one queued before recorded it on leaving).
      recordWait(this.observers, req);
    }
    const runMs = req.timeouts?.runMs;
    if (runMs !== undefined && !req.assignedAt) req.deadline = now + runMs;
    req.phase = 'assigned';
    req.worker = worker;
    req.lease = lease;
    req.targetModel = model;
    req.assignedAt = now;
    if (req.translator) req.sink = req.translator.sinkFor(translator !== undefined);
    this.gate.acquire(req);
    this.watchdogs.assigned(req, now);
    this.onWorkers.set(req.id, req);
    req.timer = this.clock.setTimeout(() => this.onRequestTimeout(req), Math.max(0, req.deadline - now));
    req.sink.routed(model, model === req.plan.target ? undefined : req.model);
    this.log.placed(req, worker, model);
    this.observers.placed(req, worker, now);
    lease.send({
      type: 'request',
      request_id: req.id,
      model,
      endpoint_path: translator ? translator.endpoint : req.endpointPath,
      is_streaming: req.isStreaming,
      body: translator ? translator.bodyFor(model) : req.bodyFor(model),
      headers: req.headers,
    });
  }

  private onRequestTimeout(req: RelayRequest): void {
    if (req.phase !== 'assigned' && req.phase !== 'streaming') return;
    this.observers.cancelled('timeout');
    this.cancelLease(req, 'timeout');
    this.end.fail(req, Errors.requestTimeout());
  }

  /** Sends exactly one `cancel`; the slot stays held until the worker confirms (see SlotLease.cancel). */
  cancelLease(req: RelayRequest, reason: CancelReason): void {
    const lease = req.lease;
    if (!lease) return;
    const wire = lease.cancel(reason);
    if (wire === undefined) return;
    this.onWorkers.delete(req.id);
    this.log.cancelSent(req, reason, wire, lease.worker);
  }

  // ---------------------------------------------------------------- workers coming and going

  /**
   * Pull path: a worker has free slots, so the oldest queued requests it may serve (same filters
   * as on arrival, whatever provider they were admitted at) are routed again by the strategy,
   * among every free eligible worker.
   */
  private pullWork(worker: WorkerSnapshot): void {
    if (worker.draining || this.fleet.directory.get(worker.id) !== worker) return;
    const now = this.clock.now();
    const fair = this.order.active ? this.order.filterFor(this.fleet.sessions.get(worker.id), now) : undefined;
    while (worker.freeSlots > 0) {
      const req = this.queue.takeFor(worker, (r) => !this.gate.blocked(r) && this.router.canServe(worker, r.plan, r.targetModel), now, fair);
      if (!req) return;
      this.assign(req, this.router.pick(req.plan, req.targetModel) ?? worker, req.targetModel);
    }
  }

  /** The worker's connection is gone: requeue what can be requeued, fail the rest. */
  private onWorkerGone(worker: WorkerSnapshot, orphans: readonly SlotLease[]): void {
    const reqs: RelayRequest[] = [];
    for (const lease of orphans) {
      const req = this.onWorkers.get(lease.requestId);
      if (!req) continue;
      this.onWorkers.delete(req.id);
      reqs.push(req);
    }
    // Oldest first, so the earliest arrival gets the first free slot elsewhere.
    for (const req of reqs.sort((a, b) => a.receivedAt - b.receivedAt)) this.rescue(req);
    this.replanner.workerGone(worker);
  }

  /**
   * The worker let go of the request before answering: requeued (within the limits) or failed. `counted` false: its
   * worker's replica had no free slot after all (cluster mode): routed again as it stands, not counted.
   */
  rescue(req: RelayRequest, counted = true): void {
    this.end.clearTimer(req);
    req.worker = undefined;
    req.lease = undefined;
    if (req.sink.clientGone) return this.end.settle(req, CLIENT_CLOSED);
    if (!counted) return this.dispatch(req, true);
    if (req.started) return this.end.fail(req, Errors.workerDisconnected());
    if (this.router.provider(req.provider.name) !== req.provider) return this.end.fail(req, Errors.providerDeleted());
    if (req.requeues >= this.config.maxRequeues) return this.end.fail(req, Errors.requeueExhausted());
    req.requeues++;
    this.buffers.dropBody(req);
    req.streamedBytes = 0;
    this.observers.requeued(req);
    if (this.fleet.closing && !this.order.clustered) return this.end.fail(req, Errors.serverShutdown());
    this.dispatch(req, true);
  }
}
