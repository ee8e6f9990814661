import type { Clock } from '../common/clock';
import type { WorkerSession } from '../fleet/worker-session';
import type { Queueable } from '../queue/admission-queue';
import type { Rank, RemoteDepths } from '../queue/remote-depths';

/**
 * How long a worker's freed slot may wait for an older request of another replica: the other
 * replicas learn of the slot within one publication (20 ms) and forward at once; past this the slot
 * goes to this replica's own queue anyway (the older request may be one this worker cannot serve).
 */
export const DEFER_MS = 100;

/** Requests a worker's slot was held for in vain, remembered per worker at most. */
const IN_VAIN_KEPT = 256;

/**
 * Cluster mode: the order across replicas. A freed slot of a worker is offered to this replica's
 * queue (the pull path), whether the worker is connected here or to another replica; a request of
 * this replica that a request waiting at any other replica (for a model the worker serves) is
 * clearly ahead of in the cluster's order — a higher priority after aging; else, another tenant,
 * served least recently; else an earlier arrival, each by more than CLUSTER_ORDER_SLACK_MS
 * (RemoteDepths.behind) — is held back for up to DEFER_MS, so that replica can send its request to
 * the slot (its own worker: from its own queue; another's: forwarded to the worker's replica, which
 * grants first come). One process: never consulted (no other replica publishes anything waiting).
 */
export class ClusterOrder {
  /** Workers (of this replica or another) whose freed slot is held now (each has its recheck timer). */
  private readonly holding = new Set<WorkerSession>();

  constructor(
    /** Cluster mode (`CLUSTER_REDIS_URL`): a stopping replica still serves through other replicas' workers. */
    readonly clustered: boolean,
    private readonly elsewhere: RemoteDepths,
    private readonly clock: Clock,
    /** Offers the worker's free slots again (the pull path). */
    private readonly offer: (worker: WorkerSession) => void,
    /** Offers every worker with a free slot (only when a hold ends with its slot taken: not on a request's path). */
    private readonly offerFree: () => void = () => undefined,
  ) {
    // A slot held on what another replica last published is looked at again when it publishes anew:
    // the request it was held for may have been served meanwhile (its publication is at most 20 ms old).
    elsewhere.onChange = () => this.reconsider();
  }

  /** Whether another replica has requests waiting (one size check: the pull path asks first). */
  get active(): boolean {
    return this.elsewhere.waiting;
  }

  /**
   * The extra filter of one pull for a worker; undefined when there is nothing to keep in order.
   * The same for another replica's worker as for one of this replica's: were only the worker's own
   * replica's requests compared, two replicas that both see its slot free would race for it, and the
   * worker's replica grants the first to arrive, which may be the newer request.
   */
  filterFor(worker: WorkerSession | undefined, now: number): ((r: Queueable) => boolean) | undefined {
    if (!this.elsewhere.waiting || !worker) return undefined;
    // Seen with no free slot: a slot held here went to someone (another replica's request, for a worker
    // of another replica, never passes through this replica's reserve); the next freed one is held anew.
    if (worker.freeSlots <= 0) {
      worker.deferUntil = 0;
      return undefined;
    }
    // Ranked once per pull: the other replicas' requests this worker could serve, whatever their model.
    const rivals = this.elsewhere.rivalsFor(worker, now, worker.heldInVain);
    if (rivals.length === 0) return undefined;
    return (r) => {
      const ahead = this.elsewhere.aheadOf(r, rivals, now);
      if (ahead === undefined) return true;
      // A deadline passed more than a hold ago belongs to an earlier hold (its request left, nothing
      // was pulled when it ended): this is a new one, not one found expired.
      if (worker.deferUntil === 0 || now - worker.deferUntil > DEFER_MS) worker.deferUntil = now + DEFER_MS;
      if (now >= worker.deferUntil) {
        // Held for it in vain: its replica could not send it here (its tenant at a limit, a pool or a
        // capability this worker lacks, no link to the worker's replica). The next slots are not held for it again.
        this.inVain(worker, ahead);
        return true;
      }
      this.holding.add(worker);
      this.recheck(worker);
      return false;
    };
  }

  private inVain(worker: WorkerSession, rival: Rank): void {
    const seen = (worker.heldInVain ??= new Map());
    // Bounded: past this many, what is remembered starts over (those requests are likely served by now).
    if (seen.size >= IN_VAIN_KEPT) seen.clear();
    seen.set(rival.key, rival.arrivedAt);
  }

  /** Whether a freed slot of this worker is being held for another replica's older request (a new arrival waits). */
  holds(worker: object): boolean {
    if (!this.elsewhere.waiting) return false;
    // A worker is its session, local or another replica's (routing reads sessions through the snapshot type).
    const w = worker as Partial<WorkerSession>;
    return w.deferUntil !== undefined && w.deferUntil > this.clock.now();
  }

  /**
   * Whether a request that was just routed to this free worker may take it now. A slot freed while
   * this replica had nothing waiting was offered to no filter: a new arrival must not take it ahead
   * of another replica's older request either (it waits, and the slot is held for that request as
   * for the queue's own, within the same bound).
   */
  admits(worker: object, req: Queueable): boolean {
    if (!this.elsewhere.waiting) return true;
    const now = this.clock.now();
    const fair = this.filterFor(worker as WorkerSession, now);
    return fair === undefined || fair(req);
  }

  /** Offers every held slot again, on fresh figures (nothing to do unless a slot is held). */
  private reconsider(): void {
    if (this.holding.size === 0) return;
    const now = this.clock.now();
    for (const worker of [...this.holding]) {
      this.seen(worker);
      // Taken meanwhile (a forwarded request reserved it, or its replica published it busy), or no
      // longer held: its timer offers it.
      if (worker.deferUntil === 0 || worker.deferUntil <= now) this.holding.delete(worker);
      else this.offer(worker);
    }
  }

  /** Looks again once the deferral ends (one timer per worker). */
  private recheck(worker: WorkerSession): void {
    if (worker.deferTimer !== undefined) return;
    worker.deferTimer = this.clock.setTimeout(
      () => {
        worker.deferTimer = undefined;
        this.holding.delete(worker);
        const taken = worker.freeSlots <= 0;
        this.seen(worker);
        this.offer(worker);
        // Taken, by the request it was held for: what waited here meanwhile (a new arrival routed to
        // it) may go to another free worker, which no event offers (an idle worker frees nothing).
        if (taken) this.offerFree();
      },
      Math.max(0, worker.deferUntil - this.clock.now()),
    );
  }

  /**
   * A held worker looked at again: with no free slot, the hold is over (the slot went to someone), so
   * a deferral of a later freed slot starts anew rather than finding this one's deadline passed. This
   * is the one place another replica's worker is seen taken when the pull path is not asked (nothing
   * waiting elsewhere any more).
   */
  private seen(worker: WorkerSession): void {
    if (worker.freeSlots <= 0) worker.deferUntil = 0;
  }
}
