import { CacheStats, declaredFor, ModelCapabilities, RunnerInfo, ServerToWorkerMessage } from '../protocol';
import { TimerHandle } from '../common/clock';
import type { SlotLease } from './slot-lease';
import { RoutableWorker } from './worker-snapshot';
import type { WorkerConnectedRecord } from '../registry/worker-records.port';
import { BoundedIdSet } from './bounded-id-set';

const RETIRED_IDS_KEPT = 1024;
const CANCELLED_IDS_KEPT = 16384;

/** The transport side of a worker as the relay sees it (implemented by worker-link). */
export interface WorkerChannel {
  send(message: ServerToWorkerMessage): void;
  close(code: number, reason: string): void;
  /** Cluster mode, a remote worker's channel: its replica is gone, so every request in flight on it ends now. */
  abandon?(): void;
}

/** A cancelled request's slot, kept until the worker completes it or reports a lower load. */
export interface HeldSlot {
  /** Stops the grace timer that would give the slot back. */
  stopTimer: () => void;
  /** The request's place in the order of requests sent to this worker (see `sentSeq`). */
  sentSeq: number;
}

/** Pings remembered awaiting their pong; a worker that stops answering does not grow this. */
const PINGS_TRACKED = 32;

/** What a worker says about itself at registration (sanitised by the link). */
export interface WorkerIdentity extends WorkerConnectedRecord {
  capabilities?: Record<string, ModelCapabilities>;
  endpoints?: string[];
  declaredPriority?: number;
}

/**
 * One connected, registered worker in this process: its channel, its in-flight leases, held slots,
 * drain timer and ping marks (local, never shared), and the plain fields of its `WorkerSnapshot`.
 * Mutated only by the Fleet and the leases it grants.
 */
export class WorkerSession implements RoutableWorker {
  readonly id: string;
  readonly provider: string;
  readonly name: string;
  readonly maxConcurrent: number;
  readonly remoteAddress: string;
  readonly connectedAt: number;
  /** The replica holding the connection (set by the Fleet that attaches it). */
  replica = '';
  /**
   * Cluster mode: a worker connected to another replica, seen through what that replica publishes.
   * Its channel is the internal link (requests are forwarded there); its drains, records and gauges
   * belong to that replica.
   */
  remote = false;
  /**
   * Cluster mode: until when a freed slot of this worker is left to an older request waiting at
   * another replica (0: not deferring); see dispatch/cluster-order.ts.
   */
  deferUntil = 0;
  deferTimer: TimerHandle | undefined;
  /**
   * Cluster mode: other replicas' waiting requests a slot of this worker was held for in vain (their
   * replica did not send them: this worker cannot serve them), by key, with their arrival: not held for again.
   */
  heldInVain: Map<string, number> | undefined;
  models: Set<string> = new Set();
  wildcard = false;
  /** Accepted models in first-seen order, `*` included. */
  private modelList: string[] = [];
  private declared: Record<string, ModelCapabilities> = {};
  /** Declarations resolved per advertised model (`*` folded in), so routing does one lookup; null = none. */
  declaredByModel = new Map<string, ModelCapabilities | null>();
  endpoints: ReadonlySet<string> | undefined;
  declaredPriority: number | undefined;
  runner: RunnerInfo | undefined;
  runnerCapabilities: Record<string, unknown> | undefined;
  features: ReadonlySet<string> = new Set();
  /** The backend's cache state from the latest `pong` (negotiated `cache_stats`); undefined = never reported. */
  cacheStats: CacheStats | undefined;
  /** Bookkeeping of the routing strategy's rotation (when this worker was last picked). */
  rotationSeq = 0;
  /** The worker's place for affinity hashing (a hash of its name; see routing/affinity.ts), computed once. */
  affinityHash = -1;
  /** Leases of the requests this worker is working on, by request id. */
  readonly assigned = new Map<string, SlotLease>();
  /** Cancelled requests whose slot is kept until the worker completes them or reports lower load. */
  readonly held = new Map<string, HeldSlot>();
  /** Requests sent to this worker so far: each lease records its number when it is granted. */
  sentSeq = 0;
  /** `sentSeq` when each unanswered ping was sent, oldest first (a pong answers the oldest). */
  private readonly pingMarks: number[] = [];
  /** Unanswered pings older than every kept mark (dropped past PINGS_TRACKED); their pongs come first. */
  private unmarkedPings = 0;
  /** Load the worker reported that the gateway does not account for (work from a previous session). */
  externalLoad = 0;
  draining = false;
  lastSeenAt: number;
  /** Ids of requests this worker finished recently: late frames for them are dropped, not fatal. */
  private readonly retired = new BoundedIdSet(RETIRED_IDS_KEPT);
  /** Ids of cancelled requests whose slot was given back (see retireCancelled). */
  private readonly cancelled = new BoundedIdSet(CANCELLED_IDS_KEPT);
  drainTimer: TimerHandle | undefined;
  /** Models it still advertises that routing must not send it: an unload is draining them. */
  readonly heldOut = new Set<string>();

  constructor(
    identity: WorkerIdentity,
    readonly channel: WorkerChannel,
  ) {
    this.id = identity.id;
    this.provider = identity.provider;
    this.name = identity.name;
    this.maxConcurrent = identity.maxConcurrent;
    this.remoteAddress = identity.remoteAddress;
    this.connectedAt = identity.connectedAt;
    this.lastSeenAt = identity.connectedAt;
    this.endpoints = identity.endpoints ? new Set(identity.endpoints) : undefined;
    this.declaredPriority = identity.declaredPriority;
    this.setModels(identity.models);
    this.capabilities = identity.capabilities ?? {};
  }

  /** Capabilities the worker advertises per model (`*` = every model). */
  get capabilities(): Record<string, ModelCapabilities> {
    return this.declared;
  }

  set capabilities(declared: Record<string, ModelCapabilities>) {
    this.declared = declared;
    this.declaredByModel = new Map();
    for (const m of this.models) this.declaredByModel.set(m, declaredFor(declared, m) ?? null);
  }

  /** Called through WorkerIndex.setModels, which keeps the model index in step. */
  setModels(models: string[]): void {
    this.modelList = models;
    this.models = new Set(models.filter((m) => m !== '*'));
    this.wildcard = models.includes('*');
    this.capabilities = this.declared;
  }

  /** Whether an unload holds `model` out of routing on this worker (one size check when none does). */
  isHeldOut(model: string): boolean {
    return this.heldOut.size > 0 && this.heldOut.has(model);
  }

  /** Called through WorkerIndex.holdOut / releaseHold, which keep the model index in step. */
  setHeldOut(model: string, held: boolean): void {
    if (held) this.heldOut.add(model);
    else this.heldOut.delete(model);
  }

  /** Requests the gateway has on this worker: assigned and held (cancelled, slot not yet released). */
  get pending(): number {
    return this.assigned.size + this.held.size;
  }

  /** Slots in use: assigned requests, held (cancelled) slots and unaccounted reported load. */
  get load(): number {
    return this.assigned.size + this.held.size + this.externalLoad;
  }

  get freeSlots(): number {
    return this.draining ? 0 : Math.max(0, this.maxConcurrent - this.load);
  }

  /** The link sent a ping: the pong that answers it counts only requests sent before it. */
  pingSent(): void {
    this.pingMarks.push(this.sentSeq);
    if (this.pingMarks.length > PINGS_TRACKED) {
      // The oldest mark goes, but its ping is still owed a pong: that pong must not take the next
      // (newer) mark, or every later pong would count requests sent after its ping and free held
      // slots early. It is counted instead, and answered with "unknown moment" (frees nothing).
      this.pingMarks.shift();
      this.unmarkedPings++;
    }
  }

  /**
   * For a pong: `sentSeq` at the ping it answers (frames keep their order, so the oldest
   * unanswered one); undefined when no ping is outstanding (the load's moment is unknown).
   */
  takePingMark(): number | undefined {
    if (this.unmarkedPings > 0) {
      this.unmarkedPings--;
      return undefined;
    }
    return this.pingMarks.shift();
  }

  /** Remembers a finished request id (bounded), so a late chunk or completion is not a protocol error. */
  retire(requestId: string): void {
    this.retired.add(requestId);
  }

  /**
   * Remembers a cancelled request whose slot was given back: its daemon may keep sending frames
   * for it long after (the public daemon never confirms a cancel), so these ids are kept apart
   * from the completions' FIFO, which a busy worker turns over in seconds.
   */
  retireCancelled(requestId: string): void {
    this.cancelled.add(requestId);
  }

  /** Whether frames for this request id are late ones to drop (finished, cancelled or held). */
  isLate(requestId: string): boolean {
    return this.held.has(requestId) || this.retired.has(requestId) || this.cancelled.has(requestId);
  }

  /** Model list in first-seen order, `*` included, as acknowledged. */
  advertisedModels(): string[] {
    return this.modelList;
  }
}
