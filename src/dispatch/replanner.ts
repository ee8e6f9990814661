import type { Clock } from '../common/clock';
import type { Fleet } from '../fleet/fleet.service';
import type { WorkerSnapshot } from '../fleet/worker-snapshot';
import type { AdmissionQueue } from '../queue/admission-queue';
import type { Router } from '../routing/router.service';
import type { ConcurrencyGate } from './concurrency-gate';
import type { DispatchLog } from './dispatch-log';
import type { RequestObservers } from './observers/request-observers';
import { leaveQueue } from './queue-waits';
import type { RelayRequest } from './relay-request';

/** The Dispatcher's placing steps, the same a request takes on arrival. */
export interface Placing {
  /** Routes a request as if it had just arrived (`requeued`: admitted already, failed rather than rejected). */
  dispatch(req: RelayRequest, requeued: boolean): void;
  /** Puts it on the worker now (it waits its turn when the worker has no slot after all). */
  assign(req: RelayRequest, worker: WorkerSnapshot, model: string): void;
  /** Queues it for `model` (`requeued`: without the queue's bound). */
  enqueue(req: RelayRequest, model: string, requeued: boolean): void;
}

/**
 * Requests already waiting in the queue, routed again when what they wait for changes: their pool
 * was cordoned, the last worker of their model left (a fallback may serve them), the last native
 * worker left (translation may serve them), or their key or tenant has room again. The waits they
 * carry are recorded once, when they next reach a worker or leave a queue for good.
 */
export class Replanner {
  constructor(
    private readonly clock: Clock,
    private readonly router: Router,
    private readonly queue: AdmissionQueue<RelayRequest>,
    private readonly fleet: Fleet,
    private readonly observers: RequestObservers,
    private readonly log: DispatchLog,
    private readonly gate: ConcurrencyGate,
    private readonly place: Placing,
  ) {}

  /**
   * A pool was cordoned: its queued requests are routed again as if they had just arrived — to
   * another pool's worker or queue, or to the router's verdict (`pool_unavailable`).
   */
  rerouteWaiting(provider: string): void {
    const now = this.clock.now();
    for (const req of this.queue.discard(provider)) {
      leaveQueue(this.observers, req, now, false);
      this.place.dispatch(req, false);
    }
  }

  /** A worker left (its orphans already rescued): what waited for its models may go elsewhere now. */
  workerGone(worker: WorkerSnapshot): void {
    const models = worker.wildcard ? [...this.queue.waitingModels()] : [...worker.models];
    this.replanWaitingFor(models);
    this.retranslateWaitingFor(models);
  }

  /**
   * A worker left (or stopped advertising models): requests waiting for a model that now has no
   * worker at all, and that have a fallback chain, are routed again (a fallback's idle workers take
   * them, or its queue does); those no other candidate can take keep waiting for their model.
   */
  replanWaitingFor(models: readonly string[]): void {
    if (this.queue.totalDepth() === 0) return;
    for (const model of models) {
      if (this.fleet.directory.servingExactly(model).size > 0) continue;
      for (const req of this.queue.waitingFor(model)) {
        if (req.plan.candidates.length < 2) continue;
        const decision = this.router.route(req.plan);
        if (decision.kind === 'reject' || decision.model === model) continue;
        this.queue.remove(req);
        this.log.replanned(req, model, decision.model);
        // The wait is carried on (recorded once, on assignment) and the request now belongs to the
        // fallback's provider (metrics, usage, provider deletion); it was admitted already, so a
        // fallback's queue takes it without its bound.
        leaveQueue(this.observers, req, this.clock.now(), false);
        if (decision.kind === 'assign') {
          req.provider = this.router.provider(decision.worker.provider) ?? req.provider;
          this.place.assign(req, decision.worker, decision.model);
        } else {
          req.provider = decision.provider;
          this.place.enqueue(req, decision.model, true);
        }
      }
    }
  }

  /**
   * Requests waiting for a native worker that translation could serve: the worker that left may have been
   * the last native one, and a free translating worker would never take them on the pull path (they wait
   * natively). Routed again: to a free worker now, or left waiting the way the router now says.
   */
  private retranslateWaitingFor(models: readonly string[]): void {
    if (this.queue.totalDepth() === 0) return;
    for (const model of models) {
      for (const req of this.queue.waitingFor(model)) {
        if (!req.plan.translation || req.plan.translated !== undefined || req.phase !== 'queued') continue;
        const decision = this.router.route(req.plan);
        if (decision.kind === 'assign') this.takeFromQueue(req, decision.worker, decision.model);
      }
    }
  }

  /** A waiting request whose key or tenant has room again goes to a worker, if one can take it now. */
  placeWaiting(req: RelayRequest): boolean {
    if (req.phase !== 'queued' || !req.queuedAt) return true; // no longer waiting: nothing to do
    const decision = this.gate.blocked(req) ? undefined : this.router.route(req.plan);
    if (decision?.kind !== 'assign') return false;
    this.takeFromQueue(req, decision.worker, decision.model);
    return true;
  }

  /** A waiting request goes to a worker now: out of the queue (its wait carried on), to the worker's provider. */
  private takeFromQueue(req: RelayRequest, worker: WorkerSnapshot, model: string): void {
    this.queue.remove(req);
    leaveQueue(this.observers, req, this.clock.now(), false);
    req.provider = this.router.provider(worker.provider) ?? req.provider;
    this.place.assign(req, worker, model);
  }
}
