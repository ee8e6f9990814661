import { ModelCapabilities, RunnerInfo, ServerToWorkerMessage } from '../protocol';
import { TimerHandle } from '../common/clock';
import { WorkerHealth } from '../routing/worker-health';

const RETIRED_IDS_KEPT = 1024;

/** The transport side of a worker as the relay sees it (implemented by worker-link). */
export interface WorkerChannel {
  send(message: ServerToWorkerMessage): void;
  close(code: number, reason: string): void;
  /** Stop/resume reading frames from this worker (backpressure from a slow client). */
  pause(): void;
  resume(): void;
}

/** In-memory state of one connected, registered worker. Mutated only by the relay. */
export class LiveWorker {
  models: Set<string>;
  wildcard: boolean;
  /** Accepted models in first-seen order, `*` included. */
  private modelList: string[] = [];
  capabilities: Record<string, ModelCapabilities>;
  /** Endpoint paths the worker's backend serves; undefined = not declared (every endpoint). */
  endpoints: ReadonlySet<string> | undefined;
  /** Routing priority the worker declared (lower is preferred); undefined = not declared. */
  declaredPriority: number | undefined;
  /** The inference server behind the worker, as its daemon detected it (optional). */
  runner: RunnerInfo | undefined;
  /** Failures, ejection and latency, shared by every connection of this worker name. */
  health = new WorkerHealth();
  /** Requests this worker is working on, by request id. */
  readonly assigned = new Map<string, unknown>();
  /** Cancelled requests whose slot is kept until the worker completes them or reports lower load. */
  readonly held = new Map<string, () => void>();
  /** Load the worker reported that the gateway does not account for (work from a previous session). */
  externalLoad = 0;
  draining = false;
  lastSeenAt: number;
  /** Streams currently paused on this worker because their client is slow. */
  readonly pausedBy = new Set<string>();
  /** Ids of requests this worker finished recently: late frames for them are dropped, not fatal. */
  readonly retired = new Set<string>();
  drainTimer: TimerHandle | undefined;

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
    this.capabilities = capabilities;
    this.endpoints = endpoints ? new Set(endpoints) : undefined;
    this.declaredPriority = declaredPriority;
    this.models = new Set();
    this.wildcard = false;
    this.setModels(models);
  }

  /** Called through WorkerRegistry.setModels, which keeps the model index in step. */
  setModels(models: string[]): void {
    this.modelList = models;
    this.models = new Set(models.filter((m) => m !== '*'));
    this.wildcard = models.includes('*');
  }

  supports(model: string): boolean {
    return this.wildcard || this.models.has(model);
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

  /** Remembers a finished request id (bounded), so a late chunk or completion is not a protocol error. */
  retire(requestId: string): void {
    this.retired.add(requestId);
    if (this.retired.size > RETIRED_IDS_KEPT) this.retired.delete(this.retired.values().next().value as string);
  }

  /** Model list in first-seen order, `*` included, as acknowledged. */
  advertisedModels(): string[] {
    return this.modelList;
  }
}
