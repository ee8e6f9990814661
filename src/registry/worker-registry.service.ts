import { Injectable } from '@nestjs/common';
import { LiveWorker } from './live-worker';

/**
 * Live worker state for this gateway instance, indexed by id, provider and model so that routing
 * a request looks only at the workers serving its model. Plain in-memory maps: the hot path never
 * waits on anything here. A shared implementation for several replicas can replace this class
 * behind the same methods.
 */
@Injectable()
export class WorkerRegistry {
  private readonly byId = new Map<string, LiveWorker>();
  private readonly byProvider = new Map<string, Set<LiveWorker>>();
  private readonly byModel = new Map<string, Set<LiveWorker>>();
  /** Workers advertising `*`: they serve any model. */
  private readonly wildcards = new Set<LiveWorker>();

  add(worker: LiveWorker): void {
    this.byId.set(worker.id, worker);
    let set = this.byProvider.get(worker.provider);
    if (!set) this.byProvider.set(worker.provider, (set = new Set()));
    set.add(worker);
    this.index(worker);
  }

  remove(worker: LiveWorker): boolean {
    if (this.byId.get(worker.id) !== worker) return false;
    this.byId.delete(worker.id);
    const set = this.byProvider.get(worker.provider);
    set?.delete(worker);
    if (set && set.size === 0) this.byProvider.delete(worker.provider);
    this.unindex(worker);
    return true;
  }

  /** Replaces a worker's models (from `models_update`), keeping the model index in step. */
  setModels(worker: LiveWorker, models: string[]): void {
    const registered = this.byId.get(worker.id) === worker;
    if (registered) this.unindex(worker);
    worker.setModels(models);
    if (registered) this.index(worker);
  }

  get(id: string): LiveWorker | undefined {
    return this.byId.get(id);
  }

  all(): IterableIterator<LiveWorker> {
    return this.byId.values();
  }

  count(): number {
    return this.byId.size;
  }

  ofProvider(provider: string): ReadonlySet<LiveWorker> {
    return this.byProvider.get(provider) ?? EMPTY;
  }

  /** Workers that advertise exactly this model (wildcard workers not included). */
  servingExactly(model: string): ReadonlySet<LiveWorker> {
    return this.byModel.get(model) ?? EMPTY;
  }

  /** Workers that advertise `*`. */
  wildcardWorkers(): ReadonlySet<LiveWorker> {
    return this.wildcards;
  }

  /** Model names some connected worker advertises by name. */
  advertisedModels(): IterableIterator<string> {
    return this.byModel.keys();
  }

  private index(worker: LiveWorker): void {
    if (worker.wildcard) this.wildcards.add(worker);
    for (const m of worker.models) {
      let set = this.byModel.get(m);
      if (!set) this.byModel.set(m, (set = new Set()));
      set.add(worker);
    }
  }

  private unindex(worker: LiveWorker): void {
    this.wildcards.delete(worker);
    for (const m of worker.models) {
      const set = this.byModel.get(m);
      if (!set) continue;
      set.delete(worker);
      if (set.size === 0) this.byModel.delete(m);
    }
  }
}

const EMPTY: ReadonlySet<LiveWorker> = new Set();
