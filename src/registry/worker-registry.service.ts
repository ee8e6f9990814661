import { Injectable } from '@nestjs/common';
import { LiveWorker } from './live-worker';

/**
 * A worker name held out of rotation by an operator (`POST /admin/workers/:id/drain` until
 * `…/undrain`): connections with that name in that provider are refused (close 1013).
 */
export interface NameCordon {
  provider: string;
  name: string;
  since: number;
  reason: string;
  /** Ids of the connections that were drained for it: undrain accepts any of them, also once gone. */
  workerIds: ReadonlySet<string>;
}

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
  /**
   * Cordoned worker names, by provider then name. In memory only, like the rest of this class: a
   * gateway restart lifts them (docs/control-plane.md). Bounded by what operators drain.
   */
  private readonly cordons = new Map<string, Map<string, NameCordon & { workerIds: Set<string> }>>();
  private readonly cordonByWorkerId = new Map<string, NameCordon>();

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

  /**
   * Takes `model` out of routing on `worker` (an unload drains it first): no new request for it
   * reaches that worker, which keeps advertising it; queued requests wait for other workers.
   */
  holdOut(worker: LiveWorker, model: string): void {
    worker.setHeldOut(model, true);
    const set = this.byModel.get(model);
    if (!set?.delete(worker)) return;
    if (set.size === 0) this.byModel.delete(model);
  }

  /** Puts a held-out model back into routing on `worker`, if it still advertises it. */
  releaseHold(worker: LiveWorker, model: string): void {
    if (!worker.isHeldOut(model)) return;
    worker.setHeldOut(model, false);
    if (this.byId.get(worker.id) !== worker || !worker.models.has(model)) return;
    let set = this.byModel.get(model);
    if (!set) this.byModel.set(model, (set = new Set()));
    set.add(worker);
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

  // ---------------------------------------------------------------- name cordons

  /** Cordons `name` within `provider` (or adds a drained connection id to its cordon). */
  cordonName(provider: string, name: string, workerId: string, reason: string, now: number): NameCordon {
    let byName = this.cordons.get(provider);
    if (!byName) this.cordons.set(provider, (byName = new Map()));
    let cordon = byName.get(name);
    if (!cordon) byName.set(name, (cordon = { provider, name, since: now, reason, workerIds: new Set() }));
    cordon.workerIds.add(workerId);
    this.cordonByWorkerId.set(workerId, cordon);
    return cordon;
  }

  /** Lifts a name's cordon; false when it was not cordoned. */
  uncordonName(provider: string, name: string): boolean {
    const byName = this.cordons.get(provider);
    const cordon = byName?.get(name);
    if (!byName || !cordon) return false;
    byName.delete(name);
    if (byName.size === 0) this.cordons.delete(provider);
    for (const id of cordon.workerIds) this.cordonByWorkerId.delete(id);
    return true;
  }

  nameCordon(provider: string, name: string): NameCordon | undefined {
    return this.cordons.get(provider)?.get(name);
  }

  /** The cordon a connection id was drained into (found also after that connection is gone). */
  cordonOfWorkerId(workerId: string): NameCordon | undefined {
    return this.cordonByWorkerId.get(workerId);
  }

  /** Every cordoned name, of one provider or of all. */
  nameCordons(provider?: string): NameCordon[] {
    const maps = provider === undefined ? [...this.cordons.values()] : [this.cordons.get(provider) ?? new Map<string, NameCordon>()];
    return maps.flatMap((m) => [...m.values()]);
  }

  /** Drops a deleted provider's name cordons. */
  clearNameCordons(provider: string): void {
    for (const c of this.nameCordons(provider)) this.uncordonName(provider, c.name);
  }

  private index(worker: LiveWorker): void {
    if (worker.wildcard) this.wildcards.add(worker);
    for (const m of worker.models) {
      if (worker.isHeldOut(m)) continue;
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
