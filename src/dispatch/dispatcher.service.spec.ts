import { FakeClock } from '../../test/support/fake-clock';
import { DispatchHarness, dispatchHarness, RecordingChannel, workerSession } from '../../test/support/dispatch-harness';
import { loadConfig } from '../config';
import { Errors, GatewayError } from '../common/gateway-error';
import { ProvidersService } from '../providers/providers.service';
import { extractRequirements } from '../routing/requirements';
import { WorkerSession } from '../fleet/worker-session';
import { Fleet } from '../fleet/fleet.service';
import { LifecycleState } from '../observability/lifecycle-state';
import { Dispatcher } from './dispatcher.service';
import { DEFER_MS } from './cluster-order';
import { readQueueDepths } from '../queue/remote-depths';
import { RelayRequest, RequestTimeouts, RequestTranslator, ResponseSink } from './relay-request';

class RecordingSink implements ResponseSink {
  clientGone = false;
  outcome: { status?: number; error?: GatewayError; chunks: string[]; ended?: boolean } = { chunks: [] };
  startStream() {}
  writeChunk(c: string) {
    this.outcome.chunks.push(c);
    return true;
  }
  readonly pendingBytes = 0;
  onDrain() {}
  abort() {}
  endStream() {
    this.outcome.ended = true;
  }
  sendComplete(status: number) {
    this.outcome.status = status;
  }
  fail(error: GatewayError) {
    this.outcome.error = error;
  }
  routed() {}
  queueWaited() {}
}

describe('Dispatcher (fake clock)', () => {
  let clock: FakeClock;
  let dispatcher: Dispatcher;
  let fleet: Fleet;
  let h: DispatchHarness;
  let providers: ProvidersService;
  let lifecycle: LifecycleState;
  let workerSeq = 0;

  beforeEach(async () => {
    clock = new FakeClock();
    const config = loadConfig({ QUEUE_TIMEOUT_SECS: '10', REQUEST_TIMEOUT_SECS: '60', CANCEL_GRACE_SECS: '5', PROVIDER_NAME: 'local' });
    config.providers[0].models = ['m'];
    h = await dispatchHarness(config, clock);
    ({ providers, fleet, lifecycle, dispatcher } = h);
  });

  function addWorker(maxConcurrent = 1): { worker: WorkerSession; channel: RecordingChannel } {
    const channel = new RecordingChannel();
    const id = `w-${++workerSeq}`;
    const worker = workerSession(id, 'local', id, ['m'], maxConcurrent, '127.0.0.1', clock.now(), channel);
    fleet.attach(worker);
    return { worker, channel };
  }

  function submit(timeouts?: RequestTimeouts): { req: RelayRequest; sink: RecordingSink } {
    const sink = new RecordingSink();
    const req = new RelayRequest({
      id: `r-${Math.random()}`,
      model: 'm',
      endpointPath: '/v1/chat/completions',
      isStreaming: false,
      body: '{}',
      headers: undefined,
      correlationId: 'c',
      tenant: 'default',
      priority: 1,
      sink,
      route: { model: 'm', requirements: extractRequirements('/v1/chat/completions', {}) },
      timeouts,
    });
    dispatcher.submit(req);
    return { req, sink };
  }

  it('cancel(): a queued request leaves the queue, a running one gets cancel{reason} with its slot held; with an error the sink gets it; once only', () => {
    const { worker, channel } = addWorker();
    const running = submit();
    const queued = submit();
    expect(dispatcher.cancel(queued.req, 'client_disconnect')).toBe(true);
    expect(queued.sink.outcome).toEqual({ chunks: [] }); // settled quietly
    expect(dispatcher.cancel(running.req, 'timeout', Errors.requestTimeout())).toBe(true);
    expect(running.sink.outcome.error?.code).toBe('request_timeout');
    expect(channel.sent.filter((m) => m.type === 'cancel')).toEqual([{ type: 'cancel', request_id: running.req.id, reason: 'timeout' }]);
    expect(worker.freeSlots).toBe(0);
    expect(dispatcher.cancel(running.req, 'timeout')).toBe(false);
    // The cancelled queued request never reaches the worker once its slot is given back.
    clock.advance(5_000);
    expect(channel.sent.filter((m) => m.type === 'request')).toHaveLength(1);
  });

  it('times a queued request out with queue_timeout and never sends it to a worker', () => {
    const { sink } = submit();
    clock.advance(9_999);
    expect(sink.outcome.error).toBeUndefined();
    clock.advance(1);
    expect(sink.outcome.error?.code).toBe('queue_timeout');
    const { channel } = addWorker();
    expect(channel.sent.filter((m) => m.type === 'request')).toHaveLength(0);
  });

  it('sends cancel{timeout} and fails request_timeout at the request deadline, holding the slot for the grace period', () => {
    const { worker, channel } = addWorker();
    const { req, sink } = submit();
    clock.advance(60_000);
    expect(sink.outcome.error?.code).toBe('request_timeout');
    expect(channel.sent).toContainEqual({ type: 'cancel', request_id: req.id, reason: 'timeout' });
    expect(worker.freeSlots).toBe(0);
    worker.lastSeenAt = clock.now(); // its pongs kept arriving (a silent worker gets no new work)
    const next = submit();
    expect(channel.sent.filter((m) => m.type === 'request')).toHaveLength(1);
    clock.advance(5_000);
    expect(worker.freeSlots).toBe(0); // the queued request took the released slot at once
    expect(channel.sent.filter((m) => m.type === 'request')).toHaveLength(2);
    expect(next.sink.outcome.error).toBeUndefined();
  });

  it('keeps the original lifetime across requeues', () => {
    const first = addWorker();
    const { sink } = submit();
    clock.advance(50_000);
    fleet.detach(first.worker); // requeued, 10 s of lifetime left
    clock.advance(10_000);
    expect(sink.outcome.error?.code).toBe('request_timeout');
  });

  it("a request with its own timeouts waits its own queue bound and runs its own time from its first worker, not the provider's", () => {
    // The provider says 10 s in the queue and 60 s in all; this request may wait 100 s and run 200 s.
    const { worker, channel } = addWorker();
    const busy = submit();
    const { req, sink } = submit({ queueMs: 100_000, runMs: 200_000 });
    const plain = submit();
    clock.advance(10_000);
    expect(plain.sink.outcome.error?.code).toBe('queue_timeout');
    expect(sink.outcome.error).toBeUndefined();
    clock.advance(50_000); // the busy request reaches its 60 s lifetime; its slot comes back after the cancel grace
    expect(busy.sink.outcome.error?.code).toBe('request_timeout');
    expect(sink.outcome.error).toBeUndefined();
    worker.lastSeenAt = clock.now(); // its pongs kept arriving (a silent worker gets no new work)
    clock.advance(5_000);
    expect(req.worker).toBe(worker);
    expect(channel.sent.filter((m) => m.type === 'request').map((m) => (m as { request_id: string }).request_id)).toEqual([busy.req.id, req.id]);
    // Requeued after 150 s on a worker (no byte yet): the time in the queue counts toward its run.
    clock.advance(150_000);
    fleet.detach(worker);
    clock.advance(49_999);
    expect(sink.outcome.error).toBeUndefined();
    clock.advance(1);
    expect(sink.outcome.error?.code).toBe('request_timeout');
  });

  it('a request with its own queue bound times out in the queue with queue_timeout at that bound', () => {
    const { sink } = submit({ queueMs: 30_000, runMs: 5_000 });
    clock.advance(29_999);
    expect(sink.outcome.error).toBeUndefined();
    clock.advance(1);
    expect(sink.outcome.error?.code).toBe('queue_timeout');
  });

  it('fails with requeue_exhausted after the third requeue', () => {
    const { sink } = submit();
    for (let i = 0; i < 4; i++) {
      const { worker } = addWorker();
      expect(sink.outcome.error).toBeUndefined();
      fleet.detach(worker);
    }
    expect(sink.outcome.error?.code).toBe('requeue_exhausted');
  });

  it('closes a draining worker with "graceful shutdown timed out" at the deadline', () => {
    const { worker, channel } = addWorker();
    const { sink } = submit();
    fleet.drain(worker, 3_000, 'maintenance');
    expect(channel.sent).toContainEqual({ type: 'graceful_shutdown', reason: 'maintenance', drain_timeout_secs: 3 });
    clock.advance(3_000);
    expect(sink.outcome.error?.code).toBe('drain_timeout');
    expect(channel.closedWith).toEqual([1000, 'graceful shutdown timed out']);
  });

  it('cancels with server_shutdown when the gateway drain deadline passes', async () => {
    const { channel } = addWorker();
    const { req, sink } = submit();
    const done = h.shutdown(2_000);
    clock.advance(2_000);
    expect(sink.outcome.error?.code).toBe('drain_timeout');
    expect(channel.sent).toContainEqual({ type: 'cancel', request_id: req.id, reason: 'server_shutdown' });
    expect(channel.closedWith).toEqual([1000, 'graceful shutdown timed out']);
    clock.advance(1_000);
    await done;
  });

  /** The same gateway in cluster mode (nothing here talks to Redis: other replicas are what tests publish). */
  async function clustered(): Promise<void> {
    const config = loadConfig({
      QUEUE_TIMEOUT_SECS: '60',
      PROVIDER_NAME: 'local',
      CLUSTER_REDIS_URL: 'redis://127.0.0.1:1',
      DATABASE_URL: 'postgres://127.0.0.1:1/x',
      CLUSTER_SECRET: 's'.repeat(32),
    });
    config.providers[0].models = ['m'];
    h = await dispatchHarness(config, clock);
    ({ providers, fleet, lifecycle, dispatcher } = h);
  }

  it('cluster mode: a new arrival does not take a free worker ahead of an older request waiting at another replica; it does once the hold ends', async () => {
    await clustered();
    const { channel } = addWorker();
    // Replica gw-b has a request of the same priority, another tenant, waiting 500 ms for model m.
    h.queue.elsewhere.set('gw-b', readQueueDepths({ providers: { local: 1 }, tenants: { other: 1 }, heads: { m: [[], [[500, 'other']], []] } }), clock.now());
    const { req } = submit();
    expect(channel.sent).toEqual([]); // the slot is held for gw-b's request, which forwards to it
    clock.advance(DEFER_MS);
    // gw-b did not take it (in this test nothing does): the bound passed and the request here gets it.
    expect(channel.sent).toEqual([expect.objectContaining({ type: 'request', request_id: req.id })]);
  });

  it('cluster mode: a request held back while the held worker goes to the other replica’s request takes another free worker', async () => {
    await clustered();
    const workers = [addWorker(), addWorker()];
    const rival = () => readQueueDepths({ providers: { local: 1 }, tenants: { other: 1 }, heads: { m: [[], [[500, 'other']], []] } });
    h.queue.elsewhere.set('gw-b', rival(), clock.now());
    const { req } = submit();
    const held = workers.find((w) => w.worker.deferUntil > 0)!;
    const idle = workers.find((w) => w !== held)!;
    // gw-b's request is forwarded here and takes the held worker; gw-b then has nothing waiting.
    expect(fleet.reserve(held.worker, 'from-gw-b', 'm')).not.toBeNull();
    h.queue.elsewhere.set('gw-b', undefined, clock.now());
    clock.advance(DEFER_MS);
    expect(idle.channel.sent).toEqual([expect.objectContaining({ type: 'request', request_id: req.id })]);
  });

  it('cluster mode: a hold whose request left meanwhile does not leave a stale deadline that skips the next hold', async () => {
    await clustered();
    const { worker, channel } = addWorker();
    const rival = (tenant: string) => readQueueDepths({ providers: { local: 1 }, tenants: { [tenant]: 1 }, heads: { m: [[], [[500, tenant]], []] } });
    h.queue.elsewhere.set('gw-b', rival('other'), clock.now());
    dispatcher.clientGone(submit().req); // held, then its client leaves
    h.queue.elsewhere.set('gw-b', undefined, clock.now());
    clock.advance(DEFER_MS + 1_000);
    // A new, older request waits at gw-b: a new arrival here is held for it again, not sent at once.
    h.queue.elsewhere.set('gw-b', rival('other2'), clock.now());
    submit();
    expect(channel.sent).toEqual([]);
    expect([...(worker.heldInVain?.keys() ?? [])]).toEqual([]);
  });

  it('cluster mode: a request waiting at shutdown waits through the drain (for other replicas’ workers), then ends with server_shutdown', async () => {
    await clustered();
    addWorker();
    submit();
    const { sink } = submit();
    let done = false;
    void h.shutdown(2_000).then(() => (done = true));
    // The drain polls every 50 ms on the clock: step it, letting each poll's promise run.
    const step = async (ms: number) => {
      for (let t = 0; t < ms; t += 50) {
        clock.advance(50);
        await new Promise((r) => setImmediate(r));
      }
    };
    await step(1_000);
    expect(sink.outcome.error).toBeUndefined();
    await step(2_000);
    expect(done).toBe(true);
    expect(sink.outcome.error?.code).toBe('server_shutdown');
  });

  it('drains a worker that registers after shutdown began instead of giving it work', () => {
    lifecycle.beginShutdown();
    const { channel } = addWorker();
    expect(channel.sent[0]).toMatchObject({ type: 'graceful_shutdown', reason: 'server_shutdown' });
    expect(channel.closedWith).toEqual([1000, 'graceful shutdown complete']);
  });

  it('fails a request whose provider was deleted when its worker (of another provider) vanishes', async () => {
    addWorker(1);
    submit(); // the local worker is busy: the next request queues at provider "local"
    const { req, sink } = submit();
    await providers.create({ name: 'other', models: ['m'] });
    const channel = new RecordingChannel();
    const other = workerSession('w-other', 'other', 'w', ['m'], 1, '127.0.0.1', clock.now(), channel);
    fleet.attach(other); // pulls the request queued at "local"
    expect(req.provider.name).toBe('local');
    expect(req.worker).toBe(other);
    await providers.remove('local');
    expect(sink.outcome.error).toBeUndefined(); // running elsewhere, untouched by the deletion
    fleet.detach(other);
    expect(sink.outcome.error?.code).toBe('provider_deleted');
  });
  describe('translation (issue 20)', () => {
    const messages = extractRequirements('/v1/messages', { messages: [{ role: 'user', content: 'hi' }] });

    function addWorkerServing(endpoints: string[], maxConcurrent = 1) {
      const channel = new RecordingChannel();
      const id = `w-${++workerSeq}`;
      const worker = workerSession(id, 'local', id, ['m'], maxConcurrent, '127.0.0.1', clock.now(), channel, undefined, endpoints);
      fleet.attach(worker);
      return { worker, channel };
    }

    function submitMessages(): { req: RelayRequest; client: RecordingSink; translating: RecordingSink } {
      const client = new RecordingSink();
      const translating = new RecordingSink();
      const translator: RequestTranslator = {
        endpoint: '/v1/chat/completions',
        prepare: () => undefined,
        bodyFor: (model) => `{"translated":"${model}"}`,
        sinkFor: (on) => (on ? translating : client),
      };
      const req = new RelayRequest({
        id: `r-${Math.random()}`,
        model: 'm',
        endpointPath: '/v1/messages',
        isStreaming: false,
        body: '{"model":"m"}',
        headers: undefined,
        correlationId: 'c',
        tenant: 'default',
        priority: 1,
        sink: client,
        route: {
          model: 'm',
          requirements: messages,
          translation: { kind: 'anthropic-messages', requirements: { ...messages, endpoint: '/v1/chat/completions' } },
        },
        translator,
      });
      dispatcher.submit(req);
      return { req, client, translating };
    }

    const requests = (c: RecordingChannel) => c.sent.flatMap((m) => (m.type === 'request' ? [[m.endpoint_path, m.body]] : []));

    it('a request waiting for a busy native worker that leaves is served translated at once (and a requeue re-decides)', () => {
      const native = addWorkerServing(['/v1/chat/completions', '/v1/messages']);
      const chat = addWorkerServing(['/v1/chat/completions'], 2);
      const first = submitMessages();
      const waiting = submitMessages();
      expect(requests(native.channel)).toEqual([['/v1/messages', '{"model":"m"}']]);
      expect(requests(chat.channel)).toEqual([]); // the native worker is busy, not gone: the request waits for it
      expect(waiting.req.phase).toBe('queued');
      fleet.detach(native.worker);
      // The first is requeued and re-decided (translated now), the waiting one routed again: both on the chat worker.
      expect(requests(chat.channel)).toEqual([
        ['/v1/chat/completions', '{"translated":"m"}'],
        ['/v1/chat/completions', '{"translated":"m"}'],
      ]);
      expect([first.req.sink, waiting.req.sink]).toEqual([first.translating, waiting.translating]);
      expect(first.req.requeues).toBe(1);
    });
  });
});

describe('Dispatcher: late frames of cancelled requests', () => {
  it('drops a late chunk for a cancelled request even after more than a thousand other requests finished on the worker', async () => {
    const clock = new FakeClock();
    const config = loadConfig({ CANCEL_GRACE_SECS: '1', PROVIDER_NAME: 'local', MAX_QUEUE_LEN: '10' });
    const { dispatcher, fleet } = await dispatchHarness(config, clock);
    const channel = new RecordingChannel();
    const worker = workerSession('w-late', 'local', 'w-late', ['m'], 1, '127.0.0.1', clock.now(), channel);
    fleet.attach(worker);
    const submit = () => {
      const req = new RelayRequest({
        id: `r-${Math.random()}`,
        model: 'm',
        endpointPath: '/v1/chat/completions',
        isStreaming: false,
        body: '{}',
        headers: undefined,
        correlationId: 'c',
        tenant: 'default',
        priority: 1,
        sink: new RecordingSink(),
        route: { model: 'm', requirements: extractRequirements('/v1/chat/completions', {}) },
      });
      dispatcher.submit(req);
      return req;
    };
    const cancelled = submit();
    (cancelled.sink as RecordingSink).clientGone = true;
    dispatcher.clientGone(cancelled); // cancel sent, slot held
    clock.advance(1000); // the daemon never confirmed: the grace period gives the slot back
    for (let i = 0; i < 1100; i++) {
      worker.lastSeenAt = clock.now();
      const r = submit();
      expect(dispatcher.frames.onComplete(worker, { type: 'response_complete', request_id: r.id, status_code: 200, body: '{}' })).toBe('ok');
    }
    expect(dispatcher.frames.onChunk(worker, cancelled.id, 'data: late\n\n')).toBe('ok');
    expect(dispatcher.frames.onChunk(worker, 'r-never-assigned', 'x')).toBe('unknown');
  });
});
