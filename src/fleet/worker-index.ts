import { WorkerSession } from './worker-session';
import { RoutableWorker } from './worker-snapshot';

/** Read-only queries over the connected workers, as routing and operators see them (snapshots). */
export interface WorkerDirectory {
  get(id: string): RoutableWorker | undefined;
  all(): IterableIterator<RoutableWorker>;
  count(): number;
  ofProvider(provider: string): ReadonlySet<RoutableWorker>;
  /** Workers that advertise exactly this model (wildcard workers not included; held-out ones left out). */
  servingExactly(model: string): ReadonlySet<RoutableWorker>;
  /** Workers that advertise `*`. */
  wildcardWorkers(): ReadonlySet<RoutableWorker>;
  /** Model names some connected worker advertises by name. */
  advertisedModels(): IterableIterator<string>;
}

/**
 * The connected workers of this gateway process, indexed by id, provider and model so that routing
 * a request looks only at the workers serving its model. Plain in-memory maps: the hot path never
 * waits on anything here. A shared implementation for several replicas can replace this class
 * behind the same methods.
 */
export class WorkerIndex implements WorkerDirectory {
  private readonly byId = new Map<string, WorkerSession>();
  private readonly byProvider = new Map<string, Set<WorkerSession>>();
  private readonly byModel = new Map<string, Set<WorkerSession>>();
  /** Workers advertising `*`: they serve any model. */
  private readonly wildcards = new Set<WorkerSession>();

  add(worker: WorkerSession): void {
    this.byId.set(worker.id, worker);
    let set = this.byProvider.get(worker.provider);
    if (!set) this.byProvider.set(worker.provider, (set = new Set()));
    set.add(worker);
    this.index(worker);
  }

  remove(worker: WorkerSession): boolean {
    if (this.byId.get(worker.id) !== worker) return false;
    this.byId.delete(worker.id);
    const set = this.byProvider.get(worker.provider);
    set?.delete(worker);
    if (set && set.size === 0) this.byProvider.delete(worker.provider);
    this.unindex(worker);
    return true;
  }

  /** Replaces a worker's models (from `models_update`), keeping the model index in step. */
  setModels(worker: WorkerSession, models: string[]): void {
    const registered = this.byId.get(worker.id) === worker;
    if (registered) this.unindex(worker);
    worker.setModels(models);
    if (registered) this.index(worker);
  }

  /**
   * Takes `model` out of routing on `worker` (an unload drains it first): no new request for it
   * reaches that worker, which keeps advertising it; queued requests wait for other workers.
   */
  holdOut(worker: WorkerSession, model: string): void {
    worker.setHeldOut(model, true);
    const set = this.byModel.get(model);
    if (!set?.delete(worker)) return;
    if (set.size === 0) this.byModel.delete(model);
  }

  /** Puts a held-out model back into routing on `worker`, if it still advertises it. */
  releaseHold(worker: WorkerSession, model: string): void {
    if (!worker.isHeldOut(model)) return;
    worker.setHeldOut(model, false);
    if (this.byId.get(worker.id) !== worker || !worker.models.has(model)) return;
    let set = this.byModel.get(model);
    if (!set) this.byModel.set(model, (set = new Set()));
    set.add(worker);
  }

  get(id: string): WorkerSession | undefined {
    return this.byId.get(id);
  }

  all(): IterableIterator<WorkerSession> {
    return this.byId.values();
  }

  count(): number {
    return this.byId.size;
  }

  ofProvider(provider: string): ReadonlySet<WorkerSession> {
    return this.byProvider.get(provider) ?? EMPTY;
  }

  /** Workers that advertise exactly this model (wildcard workers not included). */
  servingExactly(model: string): ReadonlySet<WorkerSession> {
    return this.byModel.get(model) ?? EMPTY;
  }

  /** Workers that advertise `*`. */
  wildcardWorkers(): ReadonlySet<WorkerSession> {
    return this.wildcards;
  }

  /** Model names some connected worker advertises by name. */
  advertisedModels(): IterableIterator<string> {
    return this.byModel.keys();
  }

  private index(worker: WorkerSession): void {
    if (worker.wildcard) this.wildcards.add(worker);
    for (const m of worker.models) {
      if (worker.isHeldOut(m)) continue;
      let set = this.byModel.get(m);
      if (!set) this.byModel.set(m, (set = new Set()));
      set.add(worker);
    }
  }

  private unindex(worker: WorkerSession): void {
    this.wildcards.delete(worker);
    for (const m of worker.models) {
      const set = this.byModel.get(m);
      if (!set) continue;
      set.delete(worker);
      if (set.size === 0) this.byModel.delete(m);
    }
  }
}

const EMPTY: ReadonlySet<WorkerSession> = new Set();
