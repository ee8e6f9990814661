/**
 * Listeners of requests leaving a worker (model unloads wait on them). Keyed by worker id; empty
 * on the usual path, so notifying costs one size check per released request.
 */
export class ReleaseWatchers {
  private readonly byWorker = new Map<string, Set<() => void>>();

  /** Calls `listener` each time a request leaves the worker until the returned function is called. */
  watch(workerId: string, listener: () => void): () => void {
    let set = this.byWorker.get(workerId);
    if (!set) this.byWorker.set(workerId, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.byWorker.get(workerId) === set) this.byWorker.delete(workerId);
    };
  }

  notify(workerId: string): void {
    if (this.byWorker.size === 0) return;
    const set = this.byWorker.get(workerId);
    if (set) for (const listener of [...set]) listener();
  }

  forget(workerId: string): void {
    this.byWorker.delete(workerId);
  }
}
