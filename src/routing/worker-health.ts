/** Passive outlier detection settings (`routing.eject_after_failures`, `routing.eject_cooldown_secs`, …). */
export interface EjectionPolicy {
  /** Failures before the first byte, in a row, that eject a worker. */
  ejectAfterFailures: number;
  /** First ejection's length; doubles for each ejection in a row. */
  cooldownMs: number;
  maxCooldownMs: number;
}

/** Weight of the newest sample in the time-to-first-byte moving average. */
const LATENCY_ALPHA = 0.3;
/** Entries of workers gone longer than this are forgotten (once the map is large). */
const KEEP_RELEASED_MS = 10 * 60_000;
const PRUNE_ABOVE = 4096;

/**
 * Health of one worker *name* within a provider: failures in a row, ejection and latency. Keyed by
 * name rather than connection, so a worker that crashes and reconnects keeps its record (a
 * disconnect is one of the failures that count). Two workers connected at once under one name get
 * separate records: one's failures never eject the other.
 */
export class WorkerHealth {
  consecutiveFailures = 0;
  /** Ejected while `now < ejectedUntil`. */
  ejectedUntil = 0;
  /** Ejections since the last success; the cooldown doubles with each. */
  ejections = 0;
  /** Moving average of time to first byte (ms); 0 until the first sample. */
  latencyMs = 0;
  latencySamples = 0;
  connections = 0;
  releasedAt = 0;

  isEjected(now: number): boolean {
    return now < this.ejectedUntil;
  }
}

export type FailureOutcome = { ejectedForMs: number } | undefined;

/** Every connected worker's record, read by routing for each candidate worker. */
const NO_RECORD = new WorkerHealth();

/**
 * Worker health for routing, keyed by connected worker (the record itself is shared by the
 * connections of one worker name, see WorkerHealth). Kept here, not on the worker: health is
 * routing's judgement, not a fact about the worker.
 */
export class HealthTracker {
  private readonly byKey = new Map<string, WorkerHealth>();
  private readonly byWorker = new Map<string, WorkerHealth>();

  constructor(private policy: EjectionPolicy) {}

  /** A reloaded policy applies from the next failure; ejections under way keep their end. */
  setPolicy(policy: EjectionPolicy): void {
    this.policy = policy;
  }

  /** The record of a connected worker (a blank one for a worker routing never saw join). */
  of(worker: { readonly id: string }): WorkerHealth {
    return this.byWorker.get(worker.id) ?? NO_RECORD;
  }

  /** A newly registered worker joins the health record of its name. */
  attachWorker(worker: { readonly id: string; readonly provider: string; readonly name: string }, now: number): WorkerHealth {
    const h = this.attach(worker.provider, worker.name, now);
    this.byWorker.set(worker.id, h);
    return h;
  }

  /** The worker's connection is gone: its record stays with its name (a reconnect finds it). */
  detachWorker(worker: { readonly id: string }, now: number): void {
    const h = this.byWorker.get(worker.id);
    if (!h) return;
    this.byWorker.delete(worker.id);
    this.detach(h, now);
  }

  /** The record a newly connected worker shares with earlier connections of the same name. */
  attach(provider: string, name: string, now: number): WorkerHealth {
    const key = `${provider}\u0000${name}`;
    let h = this.byKey.get(key);
    if (h && h.connections > 0) return new WorkerHealth(); // a namesake is connected: not the same worker
    if (!h) {
      if (this.byKey.size >= PRUNE_ABOVE) this.prune(now);
      this.byKey.set(key, (h = new WorkerHealth()));
    }
    h.connections++;
    return h;
  }

  detach(h: WorkerHealth, now: number): void {
    h.connections = Math.max(0, h.connections - 1);
    h.releasedAt = now;
  }

  recordSuccess(h: WorkerHealth): void {
    h.consecutiveFailures = 0;
    h.ejections = 0;
  }

  /** A request failed before its first byte; returns the ejection it caused, if any. */
  recordFailure(h: WorkerHealth, now: number): FailureOutcome {
    h.consecutiveFailures++;
    if (h.consecutiveFailures < this.policy.ejectAfterFailures || h.isEjected(now)) return undefined;
    const ms = Math.min(this.policy.maxCooldownMs, this.policy.cooldownMs * 2 ** h.ejections);
    h.ejections++;
    h.ejectedUntil = now + ms;
    return { ejectedForMs: ms };
  }

  /**
   * The average starts at 0 ("no data" scores as the best latency), so one slow sample — a
   * scheduling hiccup — moves a worker by a third of it, while a worker that is really slower
   * gets there within a few requests.
   */
  recordLatency(h: WorkerHealth, ms: number): void {
    h.latencyMs += LATENCY_ALPHA * (ms - h.latencyMs);
    h.latencySamples++;
  }

  size(): number {
    return this.byKey.size;
  }

  private prune(now: number): void {
    for (const [key, h] of this.byKey) {
      if (h.connections === 0 && now - h.releasedAt > KEEP_RELEASED_MS && !h.isEjected(now)) this.byKey.delete(key);
    }
  }
}
