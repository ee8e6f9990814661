interface WorkerModels {
  provider: string;
  models: ReadonlySet<string>;
  /** Connected to this gateway right now. */
  connected: boolean;
  /** When the worker was last known alive (disconnect or last heartbeat); used once not connected. */
  lastSeenAt: number;
}

/**
 * Which models each provider's workers served recently, kept in memory so the request path can
 * ask "queue or 404?" without touching the database. A worker counts while connected and for
 * `windowMs` after it was last seen; a worker advertising `*` makes every model known.
 */
export class RecentModelIndex {
  private readonly byId = new Map<string, WorkerModels>();
  private readonly byProvider = new Map<string, Map<string, WorkerModels>>();

  constructor(private readonly windowMs: number) {}

  connected(workerId: string, provider: string, models: string[]): void {
    this.put(workerId, { provider, models: new Set(models), connected: true, lastSeenAt: 0 });
  }

  /** A worker seen in the past (e.g. loaded from the database), known until `lastSeenAt + windowMs`. */
  seen(workerId: string, provider: string, models: string[], lastSeenAt: number): void {
    const existing = this.byId.get(workerId);
    if (existing && (existing.connected || existing.lastSeenAt >= lastSeenAt)) return;
    this.put(workerId, { provider, models: new Set(models), connected: false, lastSeenAt });
  }

  modelsChanged(workerId: string, models: string[]): void {
    const entry = this.byId.get(workerId);
    if (entry) entry.models = new Set(models);
  }

  disconnected(workerId: string, at: number): void {
    const entry = this.byId.get(workerId);
    if (!entry) return;
    entry.connected = false;
    entry.lastSeenAt = at;
  }

  isConnected(workerId: string): boolean {
    return this.byId.get(workerId)?.connected === true;
  }

  knows(provider: string, model: string, now: number): boolean {
    const workers = this.byProvider.get(provider);
    if (!workers) return false;
    for (const w of workers.values()) {
      if (this.expired(w, now)) continue;
      if (w.models.has(model) || w.models.has('*')) return true;
    }
    return false;
  }

  /** Drops workers whose window has passed, so worker churn does not grow the index. */
  prune(now: number): void {
    for (const [id, w] of this.byId) if (this.expired(w, now)) this.remove(id);
  }

  size(): number {
    return this.byId.size;
  }

  private expired(w: WorkerModels, now: number): boolean {
    return !w.connected && now - w.lastSeenAt > this.windowMs;
  }

  private put(workerId: string, entry: WorkerModels): void {
    this.remove(workerId);
    this.byId.set(workerId, entry);
    let workers = this.byProvider.get(entry.provider);
    if (!workers) this.byProvider.set(entry.provider, (workers = new Map()));
    workers.set(workerId, entry);
  }

  private remove(workerId: string): void {
    const entry = this.byId.get(workerId);
    if (!entry) return;
    this.byId.delete(workerId);
    const workers = this.byProvider.get(entry.provider);
    workers?.delete(workerId);
    if (workers?.size === 0) this.byProvider.delete(entry.provider);
  }
}
