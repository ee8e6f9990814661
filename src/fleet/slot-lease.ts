import { CancelReason, EXTENDED_CANCEL_REASONS, Features, ServerToWorkerMessage } from '../protocol';
import type { WorkerSession } from './worker-session';
import type { WorkerSnapshot } from './worker-snapshot';

/** What a lease needs from the Fleet that granted it (implemented by Fleet). */
export interface LeaseHost {
  /** A request left the worker (answered, failed or cancelled): release watchers hear it. */
  released(worker: WorkerSession): void;
  /** The worker has a slot free again: a finished drain closes it, otherwise it may take queued work. */
  slotFreed(worker: WorkerSession): void;
  /** Keeps a cancelled request's slot held until the worker confirms it or the grace period ends. */
  hold(worker: WorkerSession, requestId: string, sentSeq: number): void;
}

/**
 * One request's claim on one slot of one worker, granted by `Fleet.reserve`: the only way work
 * reaches a worker. The holder sends the request's frames through it and gives the slot back
 * exactly once — `release()` when the worker answered, `cancel()` when the gateway gives up on it
 * (the slot then stays held until the worker confirms, see LeaseHost.hold).
 */
export class SlotLease {
  /** The worker has sent this request's first response byte. */
  responding = false;
  private active = true;

  constructor(
    private readonly session: WorkerSession,
    private readonly host: LeaseHost,
    readonly requestId: string,
    /** The model the worker serves it with. */
    readonly model: string,
    /** Its place in the order of requests sent to this worker (see WorkerSession.sentSeq). */
    readonly sentSeq: number,
  ) {}

  /** The worker, as routing and operators see it. */
  get worker(): WorkerSnapshot {
    return this.session;
  }

  /** Whether the lease still holds its slot (not yet released or cancelled). */
  get held(): boolean {
    return this.active;
  }

  send(message: ServerToWorkerMessage): void {
    this.session.channel.send(message);
  }

  /**
   * The worker answered (or failed) the request: its slot is free. Call `announceFree()` once the
   * request's own outcome is delivered, so queued work follows the answer rather than overtakes it.
   */
  release(): void {
    if (!this.deactivate()) return;
    this.session.retire(this.requestId);
    this.host.released(this.session);
  }

  /** Offers the freed slot: a finished drain closes the worker, otherwise it may take queued work. */
  announceFree(): void {
    this.host.slotFreed(this.session);
  }

  /**
   * Sends exactly one `cancel` and keeps the slot held: the worker is still busy until it completes
   * the request, reports a lower load, or the grace period ends. Reasons beyond the six every worker
   * knows go only to workers that negotiated them. Returns the reason sent on the wire, or
   * undefined if the lease had already ended.
   */
  cancel(reason: CancelReason): CancelReason | undefined {
    if (!this.deactivate()) return undefined;
    this.host.released(this.session);
    const wire =
      (EXTENDED_CANCEL_REASONS as readonly string[]).includes(reason) && !this.session.features.has(Features.CANCEL_REASONS) ? 'client_disconnect' : reason;
    this.session.channel.send({ type: 'cancel', request_id: this.requestId, reason: wire });
    this.host.hold(this.session, this.requestId, this.sentSeq);
    return wire;
  }

  /** The worker's connection is gone: the lease ends without a frame (the Fleet clears the worker). */
  lapse(): void {
    this.active = false;
  }

  private deactivate(): boolean {
    if (!this.active || this.session.assigned.get(this.requestId) !== this) return false;
    this.active = false;
    this.session.assigned.delete(this.requestId);
    return true;
  }
}
