import { GatewayError, GatewayErrorCode } from '../common/gateway-error';
import { TokenCounts } from '../protocol';
import { TimerHandle } from '../common/clock';
import type { SlotLease } from '../fleet/slot-lease';
import type { WorkerSnapshot } from '../fleet/worker-snapshot';
import { Provider } from '../providers/providers.service';
import { RoutePlan, RouteRequest } from '../routing/router.service';
import { replaceTopLevelModel } from '../routing/rewrite-model';
import type { ConcurrencyCap } from '../queue/concurrency-caps';

/**
 * The HTTP side of a request, as the dispatcher drives it. Implemented by inference/ for
 * Fastify responses; every method is called at most in the order start → chunk* → end, or
 * complete, or fail — exactly one terminal call.
 */
export interface ResponseSink {
  /** The client went away (socket closed before the response finished). */
  readonly clientGone: boolean;
  /** Begins a streamed (SSE) response; called before the first chunk, with the backend's status and headers when the worker sent them. */
  startStream(status?: number, headers?: Record<string, string>): void;
  /** Writes one chunk as received; false when the client's socket buffer is full. */
  writeChunk(chunk: string): boolean;
  /** Bytes written that the client's connection has not taken yet (O(1)). */
  readonly pendingBytes: number;
  /**
   * Bytes the client's connection has taken so far (any monotonic count; only changes matter), or
   * undefined when the sink cannot tell: a slow client is cut off only when this did not move for
   * SLOW_CLIENT_TIMEOUT_SECS.
   */
  readonly progress?: number;
  /** Called once when a previously full client buffer has drained, or the client's connection closed. */
  onDrain(listener: () => void): void;
  /** Cuts the client's connection (it left its buffer full too long); nothing more is written. */
  abort(): void;
  /**
   * Ends a started stream normally; `status` is the backend's final status when the worker reported one (a worker
   * without `response_start` streams a backend's error body as chunks and tells its status only here).
   */
  endStream(status?: number): void;
  /**
   * Sends a whole response (non-streaming, or a stream that failed before its first chunk) with the
   * worker's headers as received; the sink decides which of them HTTP may carry.
   */
  sendComplete(status: number, headers: Record<string, string>, body: string | readonly string[]): void;
  /** Ends with an error: an HTTP error before the stream started, an SSE error event after. */
  fail(error: GatewayError): void;
  /**
   * The model that serves the request, and the model the client asked for when a fallback
   * serves it; the response carries them as headers. Called on every assignment.
   */
  routed(servedModel: string, fallbackFor: string | undefined): void;
  /** Total time the request has waited in the queue so far; the response reports it. */
  queueWaited(ms: number): void;
  /** Adds gateway headers to the response (when it has not started yet): `x-concurrency-*`. */
  addHeaders?(headers: Record<string, string>): void;
  /** The backend's processing time (the worker's negotiated `gpu_time_ms`, else the time the request held the worker), before `sendComplete`. */
  gpuTime?(ms: number): void;
}

/**
 * A request that can also be served translated (translate/): when routing picks a worker that lacks
 * its endpoint, the dispatcher sends the translation's endpoint and body, and answers go through
 * the translating sink. Built by the edge that parsed the request; the dispatcher only asks.
 */
export interface RequestTranslator {
  /** The backend path a translated request goes to (`/v1/chat/completions`, `/tokenize`). */
  readonly endpoint: string;
  /** Translates the client's body (once); a GatewayError (400) when it cannot be translated. */
  prepare(): GatewayError | undefined;
  /** The translated body for a worker serving `model` (after a successful `prepare`). */
  bodyFor(model: string): string;
  /** The sink the request's answer goes to now: a fresh translating one, or the client's own. */
  sinkFor(translated: boolean): ResponseSink;
  /**
   * No worker can take the request (`error` says why): answers it without one when the request has
   * such an answer (count_tokens' estimate), true if it did.
   */
  answerWithout?(error: GatewayError): boolean;
}

export type RequestPhase = 'queued' | 'assigned' | 'streaming' | 'finished';

/** A request's own bounds in place of its provider's `queue_timeout_secs` / `request_timeout_secs` (tasks). */
export interface RequestTimeouts {
  /** Longest wait each time it is queued. */
  queueMs?: number;
  /** Its lifetime, counted from when a worker first takes it instead of from its arrival. */
  runMs?: number;
}

export interface RelayRequestInit {
  id: string;
  model: string;
  endpointPath: string;
  isStreaming: boolean;
  body: string;
  headers: Record<string, string> | undefined;
  correlationId: string;
  tenant: string;
  /** The client API key that authenticated the request, when keys are in use (usage records). */
  keyId?: string;
  /** Queue level: 0 = high, 1 = normal, 2 = low. */
  priority: number;
  /** How many requests of this tenant may wait in the queue at once. */
  maxQueued?: number;
  /** `max_concurrent` of its key and tenant, where set (AdmissionQueue.caps.capsFor). */
  caps?: ConcurrencyCap<RelayRequest>[];
  sink: ResponseSink;
  route: RouteRequest;
  /** Told the request's tokens when the worker reports them (token limits, budgets). */
  onTokens?: (tokens: number) => void;
  /** Bounds of its own instead of its provider's (inference requests have none). */
  timeouts?: RequestTimeouts;
  /** How it is served by a worker that lacks its endpoint (inference's `/v1/messages`, `/v1/responses`, count_tokens). */
  translator?: RequestTranslator;
  /** The body's output-token bound (`max_tokens`, `max_completion_tokens`, `max_output_tokens`), read when it was parsed (traces). */
  maxTokens?: number;
  /** When the client's request reached the gateway, before admission (traces); absent = its `receivedAt`. */
  arrivedAt?: number;
}

/** One client request across its life: queue → worker → response, with requeues. */
export class RelayRequest {
  readonly id: string;
  readonly model: string;
  readonly endpointPath: string;
  readonly isStreaming: boolean;
  readonly body: string;
  readonly headers: Record<string, string> | undefined;
  readonly correlationId: string;
  readonly tenant: string;
  readonly keyId: string | undefined;
  readonly priority: number;
  readonly maxQueued: number;
  readonly caps: ConcurrencyCap<RelayRequest>[] | undefined;
  /** It counts against its caps' in-flight requests (see ConcurrencyGate). */
  capsHeld = false;
  /** Where its answer goes: the client's sink, or a translating one over it while a translation serves it. */
  sink: ResponseSink;
  readonly translator: RequestTranslator | undefined;
  readonly maxTokens: number | undefined;
  readonly arrivedAt: number;
  /**
   * The trace observer's state for this request while tracing is on (telemetry/); always present
   * so the request's shape never changes, and cheaper than a map keyed by request.
   */
  trace: unknown = undefined;
  /** What routing needs: requested model, requirements, pin. */
  readonly route: RouteRequest;
  readonly onTokens: ((tokens: number) => void) | undefined;
  readonly timeouts: RequestTimeouts | undefined;

  /** Routing plan made on arrival (aliases, fallbacks, pin), reused on requeue. */
  plan!: RoutePlan;
  /** The provider the request was admitted at: its timeouts, queue bound and figures. */
  provider!: Provider;
  /** The model it is served by or waits for (the alias target or a fallback). */
  targetModel = '';

  phase: RequestPhase = 'queued';
  /** The worker serving it, and its slot there (the lease sends its frames). */
  worker: WorkerSnapshot | undefined;
  lease: SlotLease | undefined;
  receivedAt = 0;
  /**
   * Absolute end of the request's lifetime (REQUEST_TIMEOUT), never extended by requeues; with its
   * own `timeouts.runMs`, Infinity until a worker first takes it.
   */
  deadline = 0;
  /** When this request entered the queue most recently (for queue-wait metrics). */
  queuedAt = 0;
  /** Requests waiting at its provider when it joined the queue (itself included); 0 = never queued. */
  queuePosition = 0;
  /** Time spent in the queue so far, over every wait (requeues included). */
  waitedMs = 0;
  /** When the current worker was given the request (its time to first byte starts here). */
  assignedAt = 0;
  requeues = 0;
  streamedBytes = 0;
  /** When the client's first response byte came from a worker (0 = none yet); usage records. */
  firstByteAt = 0;
  /** The backend's own processing time (the worker's negotiated `gpu_time_ms`); usage records. */
  backendMs: number | undefined;
  /** Token counts of the worker's completion, when it reported them; usage records. */
  tokenCounts: TokenCounts | undefined;
  /** The error the request ended with, if it failed; usage records. */
  errorCode: GatewayErrorCode | undefined;
  /** Chunks a worker sent for a non-streaming request, used when its completion has no body. */
  bufferedBody: string[] | undefined;
  /**
   * Bytes this request holds in the gateway's buffer budget (MAX_BUFFERED_BYTES): its collected
   * body, or what its client has not read yet (kept after the request ends, until the client drains or leaves).
   */
  heldBytes = 0;
  /** A drain listener is registered: the client's buffer is full (see ClientBuffers). */
  backedUp = false;
  /** Queue wait not yet recorded in the queue-wait histogram (a reroute carries it on). */
  unrecordedWaitMs = 0;
  waitRecorded = false;
  timer: TimerHandle | undefined;
  /** The watchdog line the request waits in (see Watchdogs), if any. */
  watch: { delete(req: RelayRequest): boolean } | undefined;
  /**
   * When its worker last sent a chunk (or `response_start`): the stall watchdog's reference. A double
   * from the start (`-0` equals 0), like the clock times written into it later: starting as a small
   * integer, the field would change representation when the first stream writes a time into it, and
   * V8 would discard the compiled code of every function that handles a RelayRequest, mid-traffic.
   */
  lastChunkAt = -0;
  slowClientTimer: TimerHandle | undefined;
  /** The sink's `progress` when the slow-client timer was armed (see ClientBuffers). */
  slowClientMark: number | undefined;

  constructor(init: RelayRequestInit) {
    this.id = init.id;
    this.model = init.model;
    this.endpointPath = init.endpointPath;
    this.isStreaming = init.isStreaming;
    this.body = init.body;
    this.headers = init.headers;
    this.correlationId = init.correlationId;
    this.tenant = init.tenant;
    this.keyId = init.keyId;
    this.priority = init.priority;
    this.maxQueued = init.maxQueued ?? Infinity;
    this.caps = init.caps;
    this.sink = init.sink;
    this.route = init.route;
    this.onTokens = init.onTokens;
    this.timeouts = init.timeouts;
    this.translator = init.translator;
    this.maxTokens = init.maxTokens;
    this.arrivedAt = init.arrivedAt ?? -0;
  }

  get queueProvider(): string {
    return this.provider.name;
  }

  private rewritten: { model: string; body: string } | undefined;

  /** The body for a worker serving `model`: byte-for-byte, or with the top-level model replaced. */
  bodyFor(model: string): string {
    if (model === this.model) return this.body;
    if (this.rewritten?.model !== model) this.rewritten = { model, body: replaceTopLevelModel(this.body, model) };
    return this.rewritten.body;
  }

  /** True once any byte of the response has been sent to the client. */
  get started(): boolean {
    return this.phase === 'streaming';
  }
}
