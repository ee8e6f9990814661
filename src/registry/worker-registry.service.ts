import { Injectable } from '@nestjs/common';
import { LiveWorker } from './live-worker';

/**
 * Live worker state for this gateway instance. Plain in-memory maps: the hot path (routing a
 * request, handling a frame) never waits on anything here. A shared implementation for several
 * replicas can replace this class behind the same methods.
 */
@Injectable()
export class WorkerRegistry {
  private readonly byId = new Map<string, LiveWorker>();
  private readonly byProvider = new Map<string, Set<LiveWorker>>();

  add(worker: LiveWorker): void {
    this.byId.set(worker.id, worker);
    let set = this.byProvider.get(worker.provider);
    if (!set) this.byProvider.set(worker.provider, (set = new Set()));
    set.add(worker);
  }

  remove(worker: LiveWorker): boolean {
    if (this.byId.get(worker.id) !== worker) return false;
    this.byId.delete(worker.id);
    const set = this.byProvider.get(worker.provider);
    set?.delete(worker);
    if (set && set.size === 0) this.byProvider.delete(worker.provider);
    return true;
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

  /** True when some connected, non-draining worker of the provider serves the model (or `*`). */
  servesModel(provider: string, model: string): boolean {
    for (const w of this.ofProvider(provider)) if (!w.draining && w.supports(model)) return true;
    return false;
  }

  /** Models of connected non-draining workers (of the providers `include` accepts), deduplicated, wildcard hidden. */
  listModels(include: (provider: string) => boolean = () => true): Array<{ id: string; provider: string; createdAt: number }> {
    const seen = new Map<string, { id: string; provider: string; createdAt: number }>();
    for (const w of this.byId.values()) {
      if (w.draining || !include(w.provider)) continue;
      for (const m of w.models) {
        const prev = seen.get(m);
        if (!prev || prev.createdAt > w.connectedAt) seen.set(m, { id: m, provider: w.provider, createdAt: w.connectedAt });
      }
    }
    return [...seen.values()];
  }
}

const EMPTY: ReadonlySet<LiveWorker> = new Set();
