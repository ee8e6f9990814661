import { Errors, GatewayError } from '../common/gateway-error';
import { Features } from '../protocol';
import { ProvidersService } from '../providers/providers.service';
import { WorkerSession } from '../fleet/worker-session';
import { remoteWorkerConflict } from '../fleet/remote-worker-conflict';
import { WorkerIndex } from '../fleet/worker-index';
import { gpuMemoryFreeMB, knownModels, loadedModelMemoryMB } from './runner-document';

/** Where an operation goes: one worker, a pool's workers, or (neither named) every worker. */
export interface TargetScope {
  pool?: string;
  workerId?: string;
}

/** The id of a running task of this kind on the worker (it refuses another one: 409), if any. */
export type RunningTask = (worker: WorkerSession, key: string) => string | undefined;

/** Conflict keys: loads and unloads of one model exclude each other on a worker; flushes of one target too. */
export const modelKey = (model: string) => `model\u0000${model}`;
export const flushKey = (scope: string, target?: string) => `flush\u0000${scope}\u0000${target ?? ''}`;

export interface LoadTargetRequest extends TargetScope {
  modelId: string;
  replicas: number;
  gpuMemoryBudgetMB?: number;
  evictModel?: string;
}

/**
 * Picks the workers of a lifecycle operation, or throws the refusal: unknown worker or pool (404),
 * unknown model (404), no usable worker (503 `pool_unready`), workers that did not negotiate
 * `model_lifecycle` (422 `lifecycle_unsupported`), the same operation already running (409 with
 * its `task_id`), not enough GPU memory or workers (409). Reads live state only.
 */
export class TargetSelector {
  constructor(
    private readonly registry: WorkerIndex,
    private readonly providers: ProvidersService,
  ) {}

  /**
   * `replicas` workers for a load, best first: workers that do not serve the model yet, then the
   * most free slots, then the most free GPU memory (where their runner document says).
   */
  forLoad(req: LoadTargetRequest, running: RunningTask): WorkerSession[] {
    const conflicts = (w: WorkerSession) => running(w, modelKey(req.modelId)) ?? (req.evictModel ? running(w, modelKey(req.evictModel)) : undefined);
    if (req.workerId) {
      const w = this.named(req);
      this.requireUsable(w, true);
      this.requireFeature([w]);
      if (!knows(w, req.modelId)) throw Errors.modelNotFound(req.modelId).with({ fields: { worker_id: w.id } });
      const task = conflicts(w);
      if (task) throw alreadyRunning('model-load or model-unload', req.modelId, w, task);
      if (!fitsMemory(w, req)) throw notEnoughMemory(req, [w]);
      return [w];
    }
    const usable = this.inScope(req).filter((w) => this.usable(w, true));
    if (usable.length === 0) throw noWorker(req.pool);
    const capable = this.requireFeature(usable, false);
    const knowing = capable.filter((w) => knows(w, req.modelId));
    if (knowing.length === 0) throw Errors.modelNotFound(req.modelId);
    const idle = knowing.filter((w) => !conflicts(w));
    const fitting = idle.filter((w) => fitsMemory(w, req));
    if (fitting.length < req.replicas) {
      const busy = knowing.find((w) => conflicts(w));
      if (busy) throw alreadyRunning('model-load or model-unload', req.modelId, busy, conflicts(busy)!);
      if (fitting.length < idle.length) throw notEnoughMemory(req, idle);
      throw Errors.conflict(
        `${req.replicas} replica(s) asked, but only ${fitting.length} worker(s)${req.pool ? ` of pool '${req.pool}'` : ''} can load '${req.modelId}'`,
      );
    }
    return fitting.sort((a, b) => rankForLoad(a, b, req)).slice(0, req.replicas);
  }

  /** Every worker in scope that serves the model (one named worker: that one). */
  forUnload(req: TargetScope & { modelId: string }, running: RunningTask): WorkerSession[] {
    let serving: WorkerSession[];
    if (req.workerId) {
      const w = this.named(req);
      if (!advertises(w, req.modelId, true)) throw notServedBy(req.modelId, w);
      serving = [w];
    } else {
      serving = this.inScope(req).filter((w) => advertises(w, req.modelId, false));
      if (serving.length === 0) throw Errors.modelNotFound(req.modelId);
    }
    for (const w of serving) this.requireUsable(w, false);
    this.requireFeature(serving);
    for (const w of serving) {
      const task = running(w, modelKey(req.modelId));
      if (task) throw alreadyRunning('model-load or model-unload', req.modelId, w, task);
    }
    return serving;
  }

  /**
   * The named worker, or every worker in scope that negotiated `model_lifecycle` (workers that did
   * not are left out; a cache flush is best effort). Scope `model`: only workers serving it.
   */
  forFlush(req: TargetScope & { key: string; modelId?: string }, running: RunningTask): WorkerSession[] {
    let targets: WorkerSession[];
    if (req.workerId) {
      const w = this.named(req);
      this.requireUsable(w, false);
      if (req.modelId !== undefined && !advertises(w, req.modelId, true)) throw notServedBy(req.modelId, w);
      targets = this.requireFeature([w]);
    } else {
      let usable = this.inScope(req).filter((w) => this.usable(w, false));
      if (req.modelId !== undefined) {
        usable = usable.filter((w) => advertises(w, req.modelId!, true));
        if (usable.length === 0) throw Errors.modelNotFound(req.modelId);
      }
      if (usable.length === 0) throw noWorker(req.pool);
      targets = this.requireFeature(usable, false);
    }
    for (const w of targets) {
      const task = running(w, req.key);
      if (task) throw alreadyRunning('cache-flush', req.modelId ?? 'this scope', w, task);
    }
    return targets;
  }

  // ---------------------------------------------------------------- scope

  private named(req: TargetScope): WorkerSession {
    const w = this.registry.get(req.workerId!);
    if (!w) throw Errors.notFound('Worker', req.workerId!);
    // Lifecycle commands travel on the worker's own link, which another replica holds (cluster mode).
    if (w.remote) throw remoteWorkerConflict(w);
    if (req.pool !== undefined) {
      if (!this.providers.get(req.pool)) throw Errors.notFound('Pool', req.pool);
      if (w.provider !== req.pool) throw Errors.invalidRequest(`Worker '${w.id}' belongs to pool '${w.provider}', not '${req.pool}'`, 'workerId');
    }
    return w;
  }

  private inScope(req: TargetScope): WorkerSession[] {
    // Only workers connected to this replica: lifecycle commands travel on the worker's own link.
    if (req.pool === undefined) return [...this.registry.all()].filter((w) => !w.remote);
    if (!this.providers.get(req.pool)) throw Errors.notFound('Pool', req.pool);
    return [...this.registry.ofProvider(req.pool)].filter((w) => !w.remote);
  }

  /** Connected, not draining, of an enabled provider; a load also needs a provider that is not cordoned. */
  private usable(w: WorkerSession, forLoad: boolean): boolean {
    const provider = this.providers.get(w.provider);
    return this.registry.get(w.id) === w && !w.draining && provider !== undefined && provider.enabled && !(forLoad && provider.cordon);
  }

  private requireUsable(w: WorkerSession, forLoad: boolean): void {
    if (!this.usable(w, forLoad))
      throw Errors.conflict(`Worker '${w.id}' (${w.name}) is draining or its pool is disabled${forLoad ? ' or drained' : ''}: it takes no lifecycle operation`);
  }

  /**
   * `all`: every worker must have negotiated `model_lifecycle` (else 422 naming them); otherwise
   * those that did are kept, and none is a 422.
   */
  private requireFeature(workers: WorkerSession[], all = true): WorkerSession[] {
    const capable = workers.filter((w) => w.features.has(Features.MODEL_LIFECYCLE));
    const lacking = workers.filter((w) => !capable.includes(w));
    if ((all && lacking.length > 0) || capable.length === 0) {
      const names = lacking
        .slice(0, 5)
        .map((w) => `'${w.name}' (${w.id})`)
        .join(', ');
      throw Errors.lifecycleUnsupported(
        `${lacking.length === 1 ? `Worker ${names} did` : `Workers ${names}${lacking.length > 5 ? ` and ${lacking.length - 5} more` : ''} did`} not negotiate model_lifecycle: their daemon cannot load, unload or flush (upgrade switchboard-worker)`,
      );
    }
    return capable;
  }
}

/** Whether the worker lists the model (exactly; through `*` too when `wildcard`), held out or not. */
function advertises(w: WorkerSession, model: string, wildcard: boolean): boolean {
  return w.models.has(model) || (wildcard && w.wildcard);
}

/** Whether the worker can load the model, as far as anyone can tell: it serves it, its runner lists it, or its runner says nothing. */
function knows(w: WorkerSession, model: string): boolean {
  if (advertises(w, model, true)) return true;
  const known = knownModels(w.runnerCapabilities);
  return known === undefined || known.has(model);
}

/** Free GPU memory, counting what the evicted model frees; undefined when the runner does not say. */
function freeMemoryMB(w: WorkerSession, evictModel: string | undefined): number | undefined {
  const free = gpuMemoryFreeMB(w.runnerCapabilities);
  if (free === undefined) return undefined;
  return free + (evictModel ? (loadedModelMemoryMB(w.runnerCapabilities, evictModel) ?? 0) : 0);
}

function fitsMemory(w: WorkerSession, req: LoadTargetRequest): boolean {
  if (req.gpuMemoryBudgetMB === undefined) return true;
  const free = freeMemoryMB(w, req.evictModel);
  return free === undefined || free >= req.gpuMemoryBudgetMB;
}

function rankForLoad(a: WorkerSession, b: WorkerSession, req: LoadTargetRequest): number {
  const serving = Number(advertises(a, req.modelId, false)) - Number(advertises(b, req.modelId, false));
  if (serving !== 0) return serving;
  if (a.freeSlots !== b.freeSlots) return b.freeSlots - a.freeSlots;
  const memA = freeMemoryMB(a, req.evictModel) ?? -1;
  const memB = freeMemoryMB(b, req.evictModel) ?? -1;
  if (memA !== memB) return memB - memA;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

function alreadyRunning(what: string, model: string, w: WorkerSession, taskId: string): GatewayError {
  return Errors.conflict(`A ${what} of '${model}' is already running on worker '${w.name}' (${w.id}): task ${taskId}`).with({ fields: { task_id: taskId } });
}

function notEnoughMemory(req: LoadTargetRequest, workers: WorkerSession[]): GatewayError {
  const known = workers.map((w) => freeMemoryMB(w, req.evictModel)).filter((m): m is number => m !== undefined);
  return Errors.conflict(
    `No worker${req.pool ? ` of pool '${req.pool}'` : ''} has ${req.gpuMemoryBudgetMB} MB of GPU memory free for '${req.modelId}'${known.length ? ` (the most: ${Math.max(...known)} MB)` : ''}`,
  );
}

function notServedBy(model: string, w: WorkerSession): GatewayError {
  return new GatewayError('model_not_found', `Model '${model.slice(0, 256)}' is not served by worker '${w.name}' (${w.id})`);
}

function noWorker(pool: string | undefined): GatewayError {
  return pool
    ? Errors.poolUnready(pool, 'no connected worker can take a lifecycle operation')
    : new GatewayError('pool_unready', 'No connected worker can take a lifecycle operation', { retryAfterMs: 1000 });
}
