import { Clock, TimerHandle } from '../common/clock';
import { ClusterLogger, Membership, MembershipChange, ReplicaRecord } from './membership.port';
import { MembershipStore } from './membership-store';

export interface HeartbeatMembershipOptions {
  store: MembershipStore;
  clock: Clock;
  replicaId: string;
  version: string;
  /** A replica not seen for this long is gone; this one announces itself every third of it. */
  replicaTimeoutMs: number;
  /** Shown in the log lines (host:port of the store, never credentials). */
  storeName: string;
  logger?: ClusterLogger;
}

const CONTEXT = 'Cluster';

/**
 * Membership by heartbeat: every `replicaTimeout / 3` the replica writes its record and reads the
 * live list back in one store call, so the list it holds is never older than a heartbeat. The
 * store drops records older than the timeout by its own clock (Redis TIME), so replicas' clocks
 * need not agree. Between reads, each replica also drops a member itself the moment that member's
 * `last_seen + timeout` has passed (see `scheduleExpiry`), so a dead replica is gone within the
 * timeout, not up to a heartbeat later.
 *
 * Store trouble never reaches callers: a failed heartbeat marks the replica degraded (logged once,
 * the list becomes this replica alone: it serves the workers connected to it), the next heartbeat
 * or the store's reconnection retries, and the first success re-joins and logs the recovery.
 */
export class HeartbeatMembership extends Membership {
  readonly enabled = true;
  readonly replicaId: string;
  private readonly store: MembershipStore;
  private readonly clock: Clock;
  private readonly logger?: ClusterLogger;
  private readonly startedAt: number;
  private readonly listeners = new Set<(change: MembershipChange) => void>();
  private url: string | undefined;
  private list: ReplicaRecord[] = [];
  private isDegraded = false;
  private joinedOnce = false;
  private beating = false;
  private timer: TimerHandle | undefined;
  /** Fires when the first other member's `last_seen + timeout` passes (by the store's clock). */
  private expiryTimer: TimerHandle | undefined;
  /** Store clock minus this replica's clock, as measured at the last heartbeat; unknown before the first. */
  private storeOffset: number | undefined;
  /** When (this clock) the store's list was last read: a local drop trusts only a recent one. */
  private readAt = 0;
  private stopped = false;

  constructor(private readonly options: HeartbeatMembershipOptions) {
    super();
    this.replicaId = options.replicaId;
    this.store = options.store;
    this.clock = options.clock;
    this.logger = options.logger;
    this.startedAt = options.clock.now();
    this.store.onStatus((status, reason) => {
      if (status === 'up') void this.beat();
      else this.markDegraded(reason ?? 'connection lost');
    });
  }

  advertiseUrl(): string | undefined {
    return this.url;
  }

  members(): ReplicaRecord[] {
    return this.list.length > 0 ? this.list.map((r) => ({ ...r })) : [this.selfRecord(this.clock.now())];
  }

  degraded(): boolean {
    return this.isDegraded;
  }

  async refresh(): Promise<void> {
    if (this.url === undefined || this.stopped) return;
    // Not in the list (yet, or any more): only a heartbeat puts this replica back and ends `degraded`.
    if (this.isDegraded || !this.joinedOnce) return this.beat();
    try {
      const records = await this.store.list(this.options.replicaTimeoutMs);
      this.readAt = this.clock.now();
      this.apply(records);
    } catch (e) {
      this.markDegraded(describe(e));
    }
  }

  onChange(listener: (change: MembershipChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  start(advertiseUrl: string): void {
    if (this.url !== undefined || this.stopped) return;
    this.url = advertiseUrl;
    this.list = [this.selfRecord(this.clock.now())];
    this.timer = this.clock.setInterval(() => void this.beat(), this.beatEveryMs());
    // Not connected yet (boot): the connection's `up` beats first, else the next tick reports it.
    if (this.store.connected()) void this.beat();
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.timer) this.clock.clearInterval(this.timer);
    this.timer = undefined;
    this.clearExpiry();
    if (this.url !== undefined && !this.isDegraded) {
      // Leaving at once spares the others a whole timeout of listing a replica that is gone.
      await this.store.leave(this.replicaId).catch(() => undefined);
    }
    await this.store.close().catch(() => undefined);
  }

  /** One heartbeat; a beat still waiting on the store is not doubled. */
  private async beat(): Promise<void> {
    if (this.url === undefined || this.stopped || this.beating) return;
    this.beating = true;
    try {
      const records = await this.store.beat(this.announcement(), this.options.replicaTimeoutMs);
      if (this.stopped) return;
      // The store stamped this replica's record with its own `now` during this call: compared with
      // this clock once the answer is here, it gives the offset between the two clocks, short of the
      // true one by at most the round trip, so a member is dropped that much late, never early.
      const self = records.find((r) => r.id === this.replicaId);
      if (self) this.storeOffset = self.last_seen - this.clock.now();
      this.readAt = this.clock.now();
      this.apply(records);
      this.markJoined();
    } catch (e) {
      this.markDegraded(describe(e));
    } finally {
      this.beating = false;
    }
  }

  private apply(records: ReplicaRecord[]): void {
    const others = records.filter((r) => r.id !== this.replicaId).sort((a, b) => a.id.localeCompare(b.id));
    const self = records.find((r) => r.id === this.replicaId) ?? this.selfRecord(this.clock.now());
    this.replace([self, ...others]);
  }

  private replace(next: ReplicaRecord[]): void {
    const before = new Set(this.list.map((r) => r.id));
    const after = new Set(next.map((r) => r.id));
    this.list = next;
    this.scheduleExpiry();
    const joined = [...after].filter((id) => !before.has(id));
    const left = [...before].filter((id) => !after.has(id));
    if (joined.length === 0 && left.length === 0) return;
    for (const listener of this.listeners) {
      try {
        listener({ joined, left });
      } catch {
        // A subscriber's bug must not stop the heartbeat or the other subscribers.
      }
    }
  }

  /**
   * Why: the store drops a dead member only when someone reads it, and this replica reads once a
   * heartbeat, so the member could linger up to `timeout × 4/3` here. Instead, a timer fires when the
   * earliest other member's `last_seen + timeout` passes. `last_seen` is by the store's clock (Redis
   * TIME), so it is converted with the offset measured at the last heartbeat rather than timed from
   * when this replica read it (a read sees a heartbeat up to a third of the timeout after it was
   * made). A member whose deadline has already passed by that reckoning when the store just listed it
   * is left to the store (this clock jumped, or the offset is stale): the next heartbeat settles it,
   * and the list never flaps between a local drop and the store's answer.
   */
  private scheduleExpiry(): void {
    this.clearExpiry();
    if (this.storeOffset === undefined || this.stopped) return;
    const now = this.clock.now();
    const deadlines = this.list
      .filter((r) => r.id !== this.replicaId)
      .map((r) => this.deadline(r))
      .filter((t) => t > now);
    if (deadlines.length === 0) return;
    this.expiryTimer = this.clock.setTimeout(() => this.expire(), Math.min(...deadlines) - now);
  }

  /**
   * Drops the members whose timeout has passed, reported as `left` like the store's own drops. Only
   * on a recent read: when this process itself stalled (its event loop or VM paused past a beat), the
   * members' heartbeats are merely unread here, so the store is asked first (a beat) and decides.
   */
  private expire(): void {
    this.expiryTimer = undefined;
    const now = this.clock.now();
    if (this.beating) return; // the beat under way answers with the store's list, and reschedules
    if (now - this.readAt > 2 * this.beatEveryMs()) return void this.beat();
    const kept = this.list.filter((r) => r.id === this.replicaId || this.deadline(r) > now);
    if (kept.length === this.list.length) this.scheduleExpiry();
    else this.replace(kept);
  }

  private beatEveryMs(): number {
    return Math.max(1, Math.floor(this.options.replicaTimeoutMs / 3));
  }

  /** The first instant, by this clock, at which the store would drop `r` (it keeps `last_seen >= now - timeout`). */
  private deadline(r: ReplicaRecord): number {
    return r.last_seen + this.options.replicaTimeoutMs + 1 - (this.storeOffset ?? 0);
  }

  private clearExpiry(): void {
    if (this.expiryTimer) this.clock.clearTimeout(this.expiryTimer);
    this.expiryTimer = undefined;
  }

  private markJoined(): void {
    const first = !this.joinedOnce;
    this.joinedOnce = true;
    if (!this.isDegraded && !first) return;
    const wasDegraded = this.isDegraded;
    this.isDegraded = false;
    const n = this.list.length;
    const what = wasDegraded ? `${this.options.storeName} answers again: re-joined the cluster` : `joined the cluster at ${this.options.storeName}`;
    this.logger?.log(`${what} as ${this.replicaId} (${n} replica${n === 1 ? '' : 's'})`, CONTEXT);
  }

  private markDegraded(reason: string): void {
    if (this.stopped || this.url === undefined || this.isDegraded) return;
    this.isDegraded = true;
    this.replace([this.selfRecord(this.clock.now())]);
    this.logger?.warn(`${this.options.storeName} is unreachable (${reason}): degraded, serving the workers connected here alone and retrying`, CONTEXT);
  }

  private announcement(): Omit<ReplicaRecord, 'last_seen'> {
    return { id: this.replicaId, advertise_url: this.url ?? '', started_at: this.startedAt, version: this.options.version };
  }

  private selfRecord(now: number): ReplicaRecord {
    return { ...this.announcement(), last_seen: this.list.find((r) => r.id === this.replicaId)?.last_seen ?? now };
  }
}

/** An error as one short line (ioredis messages name host:port at most, never credentials). */
function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' && !err.message.includes(code) ? `${code}: ${err.message}` : err.message;
}
