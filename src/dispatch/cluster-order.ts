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
 * Cluster mode: the order across replicas. A worker connected here offers a freed slot to this
 * replica's queue first; a request of its own that another replica's waiting request (for a model
 * the worker serves) is clearly ahead of in the cluster's order — a higher priority after aging;
 * else, another tenant, served least recently; else an earlier arrival, each by more than
 * CLUSTER_ORDER_SLACK_MS (RemoteDepths.behind) — is held back for up to DEFER_MS, so that replica
 * can forward its request to the slot. One process: never consulted (no other replica publishes
 * anything waiting).
 */
export class ClusterOrder {
  /** Local workers whose freed slot is held now (each has its recheck timer). */
  private readonly holding = new Set<WorkerSession>();

  constructor(
    /** Cluster mode (`CLUSTER_REDIS_URL`): a stopping replica still serves through other replicas' workers. */
    readonly clustered: boolean,
    private readonly elsewhere: RemoteDepths,
    private readonly clock: Clock,
    /** Offers the worker's free slots again (the pull path). */
    private readonly offer: (worker: WorkerSession) => void,
  ) {
    // A slot held on what another replica last published is looked at again when it publishes anew:
    // the request it was held for may have been served meanwhile (its publication is at most 20 ms old).
    elsewhere.onChange = () => this.reconsider();
  }

  /** Whether another replica has requests waiting (one size check: the pull path asks first). */
  get active(): boolean {
    return this.elsewhere.waiting;
  }

  /** The extra filter of one pull for a worker; undefined when there is nothing to keep in order. */
  filterFor(worker: WorkerSession | undefined, now: number): ((r: Queueable) => boolean) | undefined {
    if (!this.elsewhere.waiting || !worker) return undefined;
    if (worker.remote) return this.filterForRemote(worker, now);
    // Ranked once per pull: the other replicas' requests this worker could serve, whatever their model.
    const rivals = this.elsewhere.rivalsFor(worker, now, worker.heldInVain);
    if (rivals.length === 0) return undefined;
    return (r) => {
      const ahead = this.elsewhere.aheadOf(r, rivals, now);
      if (ahead === undefined) return true;
      if (worker.deferUntil === 0) worker.deferUntil = now + DEFER_MS;
      if (now >= worker.deferUntil) {
        // Held for it in vain: its replica could not send it here (its tenant at a limit, a pool or a
        // capability this worker lacks). The next slots are not held for it again.
        this.inVain(worker, ahead);
        return true;
      }
      this.holding.add(worker);
      this.recheck(worker);
      return false;
    };
  }

  /**
   * Another replica's worker: a request of this replica is not sent to its free slot while a request
   * waiting at that replica is clearly ahead of it (that replica's own queue takes the slot). No
   * hold here: the slot is that replica's to give.
   */
  private filterForRemote(worker: WorkerSession, now: number): ((r: Queueable) => boolean) | undefined {
    const rivals = this.elsewhere.rivalsFor(worker, now, undefined, worker.replica);
    if (rivals.length === 0) return undefined;
    return (r) => this.elsewhere.aheadOf(r, rivals, now) === undefined;
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
    // A local worker is its session (routing reads sessions through the snapshot type).
    const w = worker as Partial<WorkerSession>;
    return !w.remote && w.deferUntil !== undefined && w.deferUntil > this.clock.now();
  }

  /** Offers every held slot again, on fresh figures (nothing to do unless a slot is held). */
  private reconsider(): void {
    if (this.holding.size === 0) return;
    const now = this.clock.now();
    for (const worker of [...this.holding]) {
      // Taken meanwhile (a forwarded request reserved it), or no longer held: its timer offers it.
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
        this.offer(worker);
      },
      Math.max(0, worker.deferUntil - this.clock.now()),
    );
  }
}
