import type { CancelReason } from '../protocol';
import type { SlotLease } from './slot-lease';
import type { WorkerSession } from './worker-session';

/** What the Fleet tells others; listeners run synchronously, in subscription order. */
export interface FleetEventMap {
  /** A worker registered (before it is offered any work). */
  workerJoined: { worker: WorkerSession };
  /** A worker may take queued work: it freed a slot, joined, or something it may serve became routable. */
  slotFreed: { worker: WorkerSession };
  /**
   * A worker's connection is gone. `orphans` are the leases it held (oldest request first by the
   * holder's own order): their requests must be requeued or failed by whoever holds them.
   */
  workerGone: { worker: WorkerSession; orphans: readonly SlotLease[] };
  /** A `models_update` was applied; `dropped` are the models it no longer advertises. */
  modelsChanged: { worker: WorkerSession; dropped: readonly string[] };
  /** A drain's deadline passed with work left: every lease must be cancelled with `reason` and its request failed. */
  drainExpired: { worker: WorkerSession; reason: CancelReason };
  /** An operator drained a pool: requests waiting for it must be routed again (another pool, or its verdict). */
  poolDrained: { provider: string };
  /** The gateway is shutting down: no request may wait any more (workers are drained next). */
  closing: Record<string, never>;
  /** The shutdown drain is over (its workers gone, or its deadline passed): requests still waiting end now. */
  drained: Record<string, never>;
}

export type FleetEvent = keyof FleetEventMap;

/** A tiny synchronous event bus: the Fleet never calls back into the modules that use it. */
export class FleetEvents {
  private readonly listeners: { [E in FleetEvent]: Array<(e: FleetEventMap[E]) => void> } = {
    workerJoined: [],
    slotFreed: [],
    workerGone: [],
    modelsChanged: [],
    drainExpired: [],
    poolDrained: [],
    closing: [],
    drained: [],
  };

  on<E extends FleetEvent>(event: E, listener: (e: FleetEventMap[E]) => void): void {
    this.listeners[event].push(listener);
  }

  emit<E extends FleetEvent>(event: E, payload: FleetEventMap[E]): void {
    for (const l of this.listeners[event]) l(payload);
  }
}
