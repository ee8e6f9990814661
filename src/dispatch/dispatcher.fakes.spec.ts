import { FakeClock } from '../../test/support/fake-clock';
import { NoWorkerRecords, RecordingChannel, workerSession } from '../../test/support/dispatch-harness';
import { AppConfig, loadConfig } from '../config';
import { Errors, GatewayError } from '../common/gateway-error';
import { CancelReason, ServerToWorkerMessage, TokenCounts } from '../protocol';
import { Fleet } from '../fleet/fleet.service';
import { WorkerSession } from '../fleet/worker-session';
import { RoutableWorker, servesModel, WorkerSnapshot } from '../fleet/worker-snapshot';
import { LifecycleState } from '../observability/lifecycle-state';
import { MetricsService } from '../observability/metrics.service';
import { Provider } from '../providers/providers.service';
import { AdmissionQueue } from '../queue/admission-queue';
import { RouteDecision, RoutePlan, Router, RouteRequest } from '../routing/router.service';
import { extractRequirements } from '../routing/requirements';
import { Dispatcher } from './dispatcher.service';
import { RequestObserver } from './observers/request-observer';
import { RequestObservers } from './observers/request-observers';
import { RelayRequest, RequestTranslator, ResponseSink } from './relay-request';

const SECOND = 1000;

/** One provider, as the Dispatcher reads it: its bounds and timeouts. */
const LOCAL = { name: 'local', queueTimeoutMs: 10 * SECOND, requestTimeoutMs: 60 * SECOND, maxQueueLen: 2 } as Provider;

/**
 * A Router that answers from a script: each `route` takes the next scripted decision, and without
 * one it assigns the first connected worker with a free slot serving the model, or queues at LOCAL.
 */
class ScriptedRouter {
  readonly decisions: Array<RouteDecision> = [];
  /** What `plan` answers instead of a plan (an unknown model, say). */
  planError: GatewayError | undefined;
  constructor(private readonly fleet: Fleet) {}

  plan(route: RouteRequest): RoutePlan | GatewayError {
    return (
      this.planError ?? { requested: route.model, target: route.model, candidates: [route.model], requirements: route.requirements, native: route.requirements }
    );
  }
  /** Decisions are made by translation (the plan says so) while this is set. */
  translatedAs: string | undefined;
  route(plan: RoutePlan): RouteDecision {
    plan.translated = this.translatedAs;
    const scripted = this.decisions.shift();
    if (scripted) return scripted;
    for (const w of this.fleet.directory.all()) if (w.freeSlots > 0 && servesModel(w, plan.target)) return { kind: 'assign', worker: w, model: plan.target };
    return { kind: 'queue', model: plan.target, provider: LOCAL };
  }
  canServe(worker: WorkerSnapshot, _plan: RoutePlan, model: string): boolean {
    return servesModel(worker, model);
  }
  pick(): RoutableWorker | undefined {
    return undefined;
  }
  provider(name: string): Provider | undefined {
    return name === LOCAL.name ? LOCAL : undefined;
  }
  onWorkerReady(): void {}
  firstByte(): void {}
  succeeded(): void {}
  failed(): void {}
}

/** Request observers that write down what they are told, as `hook:requestId:detail`. */
class RecordingObservers implements Required<RequestObserver> {
  readonly log: string[] = [];
  /** Arrival and placement are seen through the frames and the other hooks: not logged. */
  submitted() {}
  placed() {}
  finished(req: RelayRequest, status: number) {
    this.log.push(`finished:${req.id}:${status}`);
  }
  rejected(req: RelayRequest, error: GatewayError) {
    this.log.push(`rejected:${req.id}:${error.code}`);
  }
  tokens(req: RelayRequest, counts: TokenCounts) {
    this.log.push(`tokens:${req.id}:${counts.total_tokens}`);
  }
  firstByte(req: RelayRequest, worker: WorkerSnapshot) {
    this.log.push(`firstByte:${req.id}:${worker.id}`);
  }
  answered(req: RelayRequest, worker: WorkerSnapshot) {
    this.log.push(`answered:${req.id}:${worker.id}`);
  }
  cancelled(reason: CancelReason) {
    this.log.push(`cancelled:${reason}`);
  }
  waited(req: RelayRequest, ms: number) {
    this.log.push(`waited:${req.id}:${ms}`);
  }
  requeued(req: RelayRequest) {
    this.log.push(`requeued:${req.id}`);
  }
  watchdog(kind: string, req: RelayRequest) {
    this.log.push(`watchdog:${req.id}:${kind}`);
  }
  /** The entries of one hook, in order. */
  of(hook: keyof RequestObserver): string[] {
    return this.log.filter((e) => e.startsWith(`${hook}:`));
  }
}

class RecordingSink implements ResponseSink {
  clientGone = false;
  readonly pendingBytes = 0;
  complete: { status: number; body: unknown } | undefined;
  error: GatewayError | undefined;
  startStream() {}
  writeChunk() {
    return true;
  }
  onDrain() {}
  abort() {}
  endStream() {}
  sendComplete(status: number, _headers: Record<string, string>, body: unknown) {
    this.complete = { status, body };
  }
  fail(error: GatewayError) {
    this.error = error;
  }
  routed() {}
  queueWaited() {}
}

describe('Dispatcher on fakes (scripted router, recording observers)', () => {
  let clock: FakeClock;
  let config: AppConfig;
  let fleet: Fleet;
  let router: ScriptedRouter;
  let queue: AdmissionQueue<RelayRequest>;
  let observers: RecordingObservers;
  let dispatcher: Dispatcher;
  let seq = 0;

  beforeEach(() => {
    clock = new FakeClock();
    config = loadConfig({ CANCEL_GRACE_SECS: '5', PROVIDER_NAME: 'local' });
    const metrics = new MetricsService();
    fleet = new Fleet(config, clock, new NoWorkerRecords(), metrics, new LifecycleState());
    router = new ScriptedRouter(fleet);
    queue = new AdmissionQueue<RelayRequest>(config, clock, metrics);
    observers = new RecordingObservers();
    dispatcher = new Dispatcher(config, clock, router as unknown as Router, queue, fleet, observers as unknown as RequestObservers);
  });

  function addWorker(maxConcurrent = 1): { worker: WorkerSession; channel: RecordingChannel } {
    const channel = new RecordingChannel();
    const id = `w-${++seq}`;
    const worker = workerSession(id, 'local', id, ['m'], maxConcurrent, '10.0.0.1', clock.now(), channel);
    fleet.attach(worker);
    return { worker, channel };
  }

  function submit(translator?: RequestTranslator, sink = new RecordingSink()): { req: RelayRequest; sink: RecordingSink } {
    const req = new RelayRequest({
      translator,
      id: `r-${++seq}`,
      model: 'm',
      endpointPath: '/v1/chat/completions',
      isStreaming: false,
      body: '{"model":"m"}',
      headers: { 'content-type': 'application/json' },
      correlationId: 'c',
      tenant: 'default',
      priority: 1,
      sink,
      route: { model: 'm', requirements: extractRequirements('/v1/chat/completions', {}) },
    });
    dispatcher.submit(req);
    return { req, sink };
  }

  const requestsTo = (channel: RecordingChannel) => channel.sent.filter((m): m is Extract<ServerToWorkerMessage, { type: 'request' }> => m.type === 'request');

  it('submit → assign sends exactly one request frame; the answer reaches the client and the observers once', () => {
    const { worker, channel } = addWorker();
    const { req, sink } = submit();
    expect(channel.sent).toEqual([
      {
        type: 'request',
        request_id: req.id,
        model: 'm',
        endpoint_path: '/v1/chat/completions',
        is_streaming: false,
        body: '{"model":"m"}',
        headers: { 'content-type': 'application/json' },
      },
    ]);
    expect(dispatcher.frames.onComplete(worker, { type: 'response_complete', request_id: req.id, status_code: 200, body: '{}' })).toBe('ok');
    expect(sink.complete).toEqual({ status: 200, body: '{}' });
    expect(observers.log).toEqual([`waited:${req.id}:0`, `answered:${req.id}:${worker.id}`, `firstByte:${req.id}:${worker.id}`, `finished:${req.id}:200`]);
    expect(worker.freeSlots).toBe(1);
    clock.advance(120 * SECOND); // its timers are gone: nothing else happens to it
    expect(observers.of('finished')).toEqual([`finished:${req.id}:200`]);
    expect(requestsTo(channel)).toHaveLength(1);
  });

  it('a scripted assignment to a fallback model sends that model and a body naming it', () => {
    const { worker, channel } = addWorker();
    router.decisions.push({ kind: 'assign', worker, model: 'alt' });
    submit();
    expect(requestsTo(channel).map((m) => [m.model, m.body])).toEqual([['alt', '{"model":"alt"}']]);
  });

  it('routed by translation: the translated endpoint and body go to the worker and the answer through the translating sink; a native requeue gets the client sink back', () => {
    const { worker, channel } = addWorker();
    const translating = new RecordingSink();
    const client = new RecordingSink();
    const asked: boolean[] = [];
    const translator: RequestTranslator = {
      endpoint: '/v1/chat/completions',
      prepare: () => undefined,
      bodyFor: (model) => `{"translated":true,"model":"${model}"}`,
      sinkFor: (translated) => (asked.push(translated), translated ? translating : client),
    };
    router.translatedAs = 'anthropic-messages';
    const { req, sink } = submit(translator, client);
    expect(requestsTo(channel).map((m) => [m.endpoint_path, m.body])).toEqual([['/v1/chat/completions', '{"translated":true,"model":"m"}']]);
    expect(req.sink).toBe(translating);
    dispatcher.frames.onComplete(worker, { type: 'response_complete', request_id: req.id, status_code: 200, body: '{}' });
    expect(translating.complete).toEqual({ status: 200, body: '{}' });
    expect(sink.complete).toBeUndefined();
    // Untranslatable: refused before any worker is involved.
    const refused = submit({ ...translator, prepare: () => Errors.invalidRequest('no messages') });
    expect(refused.sink.error?.code).toBe('invalid_request');
    expect(requestsTo(channel)).toHaveLength(1);
    router.translatedAs = undefined;
    const native = submit(translator, client);
    expect(requestsTo(channel).map((m) => m.body)).toEqual(['{"translated":true,"model":"m"}', '{"model":"m"}']);
    expect(native.req.sink).toBe(native.sink);
    expect(asked).toEqual([true, false]);
  });

  it('queued → queue timeout: queue_timeout to the client, observers told cancelled(timeout) and finished 504', () => {
    const { req, sink } = submit();
    clock.advance(10 * SECOND - 1);
    expect(sink.error).toBeUndefined();
    clock.advance(1);
    expect(sink.error?.code).toBe('queue_timeout');
    expect(observers.log).toEqual([`waited:${req.id}:${10 * SECOND}`, 'cancelled:timeout', `finished:${req.id}:504`]);
    const { channel } = addWorker();
    expect(requestsTo(channel)).toEqual([]);
    expect(dispatcher.cancel(req, 'client_disconnect')).toBe(false);
    expect(observers.of('finished')).toHaveLength(1);
  });

  it('a queued request goes to the first worker that frees a slot', () => {
    const { req } = submit();
    clock.advance(3 * SECOND);
    const { channel } = addWorker();
    expect(requestsTo(channel).map((m) => m.request_id)).toEqual([req.id]);
    expect(observers.of('waited')).toEqual([`waited:${req.id}:${3 * SECOND}`]);
  });

  it('reject paths: a plan error, a scripted reject and a full queue each reach observers.rejected and finished once', () => {
    router.planError = Errors.modelNotFound('nope');
    const unknown = submit();
    router.planError = undefined;
    router.decisions.push({ kind: 'reject', error: Errors.serverShutdown() });
    const refused = submit();
    submit();
    submit(); // the queue's bound (2) is reached
    const overflow = submit();
    expect(unknown.sink.error?.code).toBe('model_not_found');
    expect(refused.sink.error?.code).toBe('server_shutdown');
    expect(overflow.sink.error?.code).toBe('queue_full');
    expect(observers.of('rejected')).toEqual([
      `rejected:${unknown.req.id}:model_not_found`,
      `rejected:${refused.req.id}:server_shutdown`,
      `rejected:${overflow.req.id}:queue_full`,
    ]);
    expect(observers.of('finished')).toEqual([`finished:${unknown.req.id}:404`, `finished:${refused.req.id}:503`, `finished:${overflow.req.id}:429`]);
  });

  it("a worker's disconnect requeues its requests oldest first: the oldest gets the next free slot, the other waits", () => {
    const first = addWorker(2);
    router.decisions.push({ kind: 'queue', model: 'm', provider: LOCAL });
    const older = submit(); // queued by the script
    clock.advance(SECOND);
    const newer = submit(); // assigned at once
    fleet.offer(first.worker); // the worker takes the queued, older request second
    expect(requestsTo(first.channel).map((m) => m.request_id)).toEqual([newer.req.id, older.req.id]);
    const second = addWorker(1);
    fleet.detach(first.worker);
    expect(observers.of('requeued')).toEqual([`requeued:${older.req.id}`, `requeued:${newer.req.id}`]);
    expect(requestsTo(second.channel).map((m) => m.request_id)).toEqual([older.req.id]);
    expect(queue.depth('local')).toBe(1);
    expect(newer.sink.error).toBeUndefined();
    expect(observers.of('finished')).toEqual([]);
  });

  it('requeues up to maxRequeues, then fails requeue_exhausted', () => {
    const { req, sink } = submit();
    for (let i = 0; i <= config.maxRequeues; i++) {
      const { worker, channel } = addWorker();
      expect(requestsTo(channel).map((m) => m.request_id)).toEqual([req.id]);
      fleet.detach(worker);
    }
    expect(sink.error?.code).toBe('requeue_exhausted');
    expect(observers.of('requeued')).toHaveLength(config.maxRequeues);
    expect(observers.of('finished')).toHaveLength(1);
  });

  it('cancel of a queued request: out of the queue, settled quietly (499), never sent', () => {
    const { req, sink } = submit();
    expect(dispatcher.cancel(req, 'client_disconnect')).toBe(true);
    expect(dispatcher.cancel(req, 'client_disconnect')).toBe(false);
    expect(queue.depth('local')).toBe(0);
    expect(sink.error).toBeUndefined();
    expect(observers.log).toEqual(['cancelled:client_disconnect', `finished:${req.id}:499`]);
    const { channel } = addWorker();
    clock.advance(60 * SECOND);
    expect(requestsTo(channel)).toEqual([]);
  });

  it('cancel of a running request: one cancel frame, the slot held, the error to the client; a late completion changes nothing', () => {
    const { worker, channel } = addWorker();
    const { req, sink } = submit();
    expect(dispatcher.cancel(req, 'timeout', Errors.requestTimeout())).toBe(true);
    expect(channel.sent.filter((m) => m.type === 'cancel')).toEqual([{ type: 'cancel', request_id: req.id, reason: 'timeout' }]);
    expect(sink.error?.code).toBe('request_timeout');
    expect(worker.freeSlots).toBe(0);
    // The worker's answer arrives after all: it only confirms the cancel (the slot is free again).
    expect(dispatcher.frames.onComplete(worker, { type: 'response_complete', request_id: req.id, status_code: 200, body: '{}' })).toBe('ok');
    expect(worker.freeSlots).toBe(1);
    expect(sink.complete).toBeUndefined();
    expect(observers.log).toEqual([`waited:${req.id}:0`, 'cancelled:timeout', `finished:${req.id}:504`]);
  });

  it("a request's end reaches the observers exactly once, whatever else happens to it afterwards", () => {
    const { worker } = addWorker();
    const { req, sink } = submit();
    sink.clientGone = true;
    dispatcher.clientGone(req);
    dispatcher.clientGone(req);
    clock.advance(120 * SECOND); // its run deadline and the cancel grace pass
    fleet.detach(worker); // and its worker leaves
    expect(dispatcher.cancel(req, 'timeout', Errors.requestTimeout())).toBe(false);
    expect(observers.of('finished')).toEqual([`finished:${req.id}:499`]);
    expect(observers.of('cancelled')).toEqual(['cancelled:client_disconnect']);
    expect(observers.of('requeued')).toEqual([]);
  });

  it('the run deadline cancels the request on its worker and fails it request_timeout, once', () => {
    const { channel } = addWorker();
    const { req, sink } = submit();
    clock.advance(60 * SECOND);
    expect(sink.error?.code).toBe('request_timeout');
    expect(channel.sent.filter((m) => m.type === 'cancel')).toEqual([{ type: 'cancel', request_id: req.id, reason: 'timeout' }]);
    clock.advance(60 * SECOND);
    expect(observers.log).toEqual([`waited:${req.id}:0`, 'cancelled:timeout', `finished:${req.id}:504`]);
  });

  it("a drain's deadline cancels what the worker still runs and fails it drain_timeout", () => {
    const { worker, channel } = addWorker();
    const { req, sink } = submit();
    fleet.drain(worker, 3 * SECOND, 'maintenance');
    clock.advance(3 * SECOND);
    expect(sink.error?.code).toBe('drain_timeout');
    expect(channel.sent.filter((m) => m.type === 'cancel')).toEqual([{ type: 'cancel', request_id: req.id, reason: 'graceful_shutdown' }]);
    expect(observers.of('finished')).toHaveLength(1);
  });
});
