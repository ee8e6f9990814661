import { ModelCapabilities, RunnerInfo, ServerToWorkerMessage } from '../protocol';
import { TimerHandle } from '../common/clock';
import { WorkerHealth } from '../routing/worker-health';
import { declaredFor } from '../routing/capabilities';

const RETIRED_IDS_KEPT = 1024;
const CANCELLED_IDS_KEPT = 16384;

/** Adds to a bounded insertion-ordered set, dropping the oldest entry past `max`. */
function remember(set: Set<string>, id: string, max: number): void {
  set.add(id);
  if (set.size > max) set.delete(set.values().next().value as string);
}
/** Marks "this model has no declarations" in the per-model cache (one lookup instead of two). */
const NOTHING_DECLARED: ModelCapabilities = Object.freeze({});

/** The transport side of a worker as the relay sees it (implemented by worker-link). */
export interface WorkerChannel {
  send(message: ServerToWorkerMessage): void;
  close(code: number, reason: string): void;
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

/** In-memory state of one connected, registered worker. Mutated only by the relay. */
export class LiveWorker {
  models: Set<string>;
  wildcard: boolean;
  /** Accepted models in first-seen order, `*` included. */
  private modelList: string[] = [];
  private declared: Record<string, ModelCapabilities> = {};
  /** Declarations resolved per advertised model (`*` folded in), so routing does one lookup. */
  private declaredByModel = new Map<string, ModelCapabilities>();
  /** Endpoint paths the worker's backend serves; undefined = not declared (every endpoint). */
  endpoints: ReadonlySet<string> | undefined;
  /** Routing priority the worker declared (lower is preferred); undefined = not declared. */
  declaredPriority: number | undefined;
  /** The inference server behind the worker, as its daemon detected it (optional). */
  runner: RunnerInfo | undefined;
  /** The backend's runner-API capabilities document, as the worker relayed it (optional). */
  runnerCapabilities: Record<string, unknown> | undefined;
  /** Protocol extensions negotiated at registration (the gateway uses no other). */
  features: ReadonlySet<string> = new Set();
  /** Failures, ejection and latency, shared by every connection of this worker name. */
  health = new WorkerHealth();
  /** Bookkeeping of the routing strategy's rotation (when this worker was last picked). */
  rotationSeq = 0;
  /** Requests this worker is working on, by request id. */
  readonly assigned = new Map<string, unknown>();
  /** Cancelled requests whose slot is kept until the worker completes them or reports lower load. */
  readonly held = new Map<string, HeldSlot>();
  /** Requests sent to this worker so far: each request records its number when it is sent. */
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
  readonly retired = new Set<string>();
  /** Ids of cancelled requests whose slot was given back (see retireCancelled). */
  private readonly cancelled = new Set<string>();
  drainTimer: TimerHandle | undefined;
  /** Models it still advertises that routing must not send it: an unload is draining them. */
  private readonly heldOut = new Set<string>();

  constructor(
    readonly id: string,
    readonly provider: string,
    readonly name: string,
    models: string[],
    readonly maxConcurrent: number,
    readonly remoteAddress: string,
    readonly connectedAt: number,
    readonly channel: WorkerChannel,
    capabilities: Record<string, ModelCapabilities> = {},
    endpoints?: string[],
    declaredPriority?: number,
  ) {
    this.lastSeenAt = connectedAt;
    this.endpoints = endpoints ? new Set(endpoints) : undefined;
    this.declaredPriority = declaredPriority;
    this.models = new Set();
    this.wildcard = false;
    this.setModels(models);
    this.capabilities = capabilities;
  }

  /** Capabilities the worker advertises per model (`*` = every model). */
  get capabilities(): Record<string, ModelCapabilities> {
    return this.declared;
  }

  set capabilities(declared: Record<string, ModelCapabilities>) {
    this.declared = declared;
    this.declaredByModel = new Map();
    for (const m of this.models) this.declaredByModel.set(m, declaredFor(declared, m) ?? NOTHING_DECLARED);
  }

  /** What the worker declares about one model, `*` included; undefined = nothing declared. */
  capabilitiesFor(model: string): ModelCapabilities | undefined {
    const known = this.declaredByModel.get(model);
    if (known === undefined) return declaredFor(this.declared, model); // a model it serves through `*`
    return known === NOTHING_DECLARED ? undefined : known;
  }

  /** Called through WorkerRegistry.setModels, which keeps the model index in step. */
  setModels(models: string[]): void {
    this.modelList = models;
    this.models = new Set(models.filter((m) => m !== '*'));
    this.wildcard = models.includes('*');
    this.capabilities = this.declared;
  }

  supports(model: string): boolean {
    return (this.wildcard || this.models.has(model)) && !this.isHeldOut(model);
  }

  /** Whether an unload holds `model` out of routing on this worker (one size check when none does). */
  isHeldOut(model: string): boolean {
    return this.heldOut.size > 0 && this.heldOut.has(model);
  }

  /** Called through WorkerRegistry.holdOut / releaseHold, which keep the model index in step. */
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
    remember(this.retired, requestId, RETIRED_IDS_KEPT);
  }

  /**
   * Remembers a cancelled request whose slot was given back: its daemon may keep sending frames
   * for it long after (the public daemon never confirms a cancel), so these ids are kept apart
   * from the completions' FIFO, which a busy worker turns over in seconds.
   */
  retireCancelled(requestId: string): void {
    remember(this.cancelled, requestId, CANCELLED_IDS_KEPT);
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
