import { Injectable } from '@nestjs/common';

/** What the queue needs to know about a waiting request. */
export interface Queueable {
  /** When the request first arrived; requeued requests keep their place by it. */
  readonly receivedAt: number;
  /** The model it waits for (the routing decision's model). */
  readonly targetModel: string;
  /** The provider whose bound and queue-depth figures it counts against. */
  readonly queueProvider: string;
}

/** What the queue needs to know about a worker that has a free slot. */
export interface ServingWorker {
  readonly wildcard: boolean;
  readonly models: ReadonlySet<string>;
}

/**
 * Requests waiting for a worker slot. Bounded per provider, and indexed by the model they wait
 * for, so a worker that frees a slot looks only at the requests for its models and takes the
 * oldest one it can serve: a request nobody free can serve does not block the others.
 * Requeued requests go back in by arrival time, ahead of everything that arrived after them.
 */
@Injectable()
export class AdmissionQueue<T extends Queueable = Queueable> {
  private readonly byModel = new Map<string, T[]>();
  private readonly depthByProvider = new Map<string, number>();
  private total = 0;

  /** Queues a new request unless its provider's queue holds `bound` already. */
  admit(item: T, bound: number): boolean {
    if (this.depth(item.queueProvider) >= bound) return false;
    this.listFor(item.targetModel).push(item);
    this.count(item.queueProvider, 1);
    return true;
  }

  /** Puts an already admitted request back where its arrival time places it (no bound). */
  requeue(item: T): void {
    const list = this.listFor(item.targetModel);
    let i = list.length;
    while (i > 0 && list[i - 1].receivedAt > item.receivedAt) i--;
    list.splice(i, 0, item);
    this.count(item.queueProvider, 1);
  }

  remove(item: T): boolean {
    const list = this.byModel.get(item.targetModel);
    const i = list ? list.indexOf(item) : -1;
    if (i < 0) return false;
    this.removeAt(list!, i, item);
    return true;
  }

  /**
   * Removes and returns the oldest request, among those waiting for a model the worker serves,
   * that `accept` takes.
   */
  takeFor(worker: ServingWorker, accept: (item: T) => boolean): T | undefined {
    if (this.total === 0) return undefined;
    let best: { list: T[]; index: number } | undefined;
    const consider = (list: T[] | undefined) => {
      if (!list) return;
      for (let i = 0; i < list.length; i++) {
        if (best && list[i].receivedAt >= best.list[best.index].receivedAt) return;
        if (accept(list[i])) {
          best = { list, index: i };
          return;
        }
      }
    };
    if (worker.wildcard || worker.models.size > this.byModel.size) {
      for (const [model, list] of this.byModel) if (worker.wildcard || worker.models.has(model)) consider(list);
    } else {
      for (const model of worker.models) consider(this.byModel.get(model));
    }
    if (!best) return undefined;
    const item = best.list[best.index];
    this.removeAt(best.list, best.index, item);
    return item;
  }

  /** Removes every request counted against a provider, oldest first. */
  discard(provider: string): T[] {
    const out: T[] = [];
    for (const list of this.byModel.values()) for (const item of list) if (item.queueProvider === provider) out.push(item);
    for (const item of out) this.remove(item);
    return out.sort((a, b) => a.receivedAt - b.receivedAt);
  }

  depth(provider: string): number {
    return this.depthByProvider.get(provider) ?? 0;
  }

  totalDepth(): number {
    return this.total;
  }

  private listFor(model: string): T[] {
    let list = this.byModel.get(model);
    if (!list) this.byModel.set(model, (list = []));
    return list;
  }

  private removeAt(list: T[], index: number, item: T): void {
    list.splice(index, 1);
    if (list.length === 0) this.byModel.delete(item.targetModel);
    this.count(item.queueProvider, -1);
  }

  private count(provider: string, delta: number): void {
    const n = this.depth(provider) + delta;
    if (n === 0) this.depthByProvider.delete(provider);
    else this.depthByProvider.set(provider, n);
    this.total += delta;
  }
}
