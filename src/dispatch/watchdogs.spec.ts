import { FakeClock } from '../../test/support/fake-clock';
import { DispatchHarness, dispatchHarness, RecordingChannel, workerSession } from '../../test/support/dispatch-harness';
import { loadConfig } from '../config';
import { GatewayError } from '../common/gateway-error';
import { extractRequirements } from '../routing/requirements';
import { WorkerSession } from '../fleet/worker-session';
import { RelayRequest, ResponseSink } from './relay-request';

const SECOND = 1000;

class StreamSink implements ResponseSink {
  clientGone = false;
  started = false;
  chunks: string[] = [];
  ended = false;
  complete: number | undefined;
  error: GatewayError | undefined;
  readonly pendingBytes = 0;
  startStream() {
    this.started = true;
  }
  writeChunk(c: string) {
    this.chunks.push(c);
    return true;
  }
  onDrain() {}
  abort() {}
  endStream() {
    this.ended = true;
  }
  sendComplete(status: number) {
    this.complete = status;
  }
  fail(error: GatewayError) {
    this.error = error;
  }
  routed() {}
  queueWaited() {}
}

describe('Watchdogs (fake clock, real Dispatcher and Router)', () => {
  let clock: FakeClock;
  let h: DispatchHarness;
  let seq = 0;

  beforeEach(async () => {
    clock = new FakeClock();
    const config = loadConfig({
      REQUEST_TIMEOUT_SECS: '600',
      CANCEL_GRACE_SECS: '5',
      PROVIDER_NAME: 'local',
      ROUTING_FIRST_BYTE_TIMEOUT_SECS: '20',
      ROUTING_STREAM_IDLE_TIMEOUT_SECS: '7',
    });
    config.providers[0].models = ['m'];
    h = await dispatchHarness(config, clock);
  });

  function addWorker(): { worker: WorkerSession; channel: RecordingChannel } {
    const channel = new RecordingChannel();
    const id = `w-${++seq}`;
    const worker = workerSession(id, 'local', id, ['m'], 4, '127.0.0.1', clock.now(), channel);
    h.fleet.attach(worker);
    return { worker, channel };
  }

  function submit(isStreaming = false): { req: RelayRequest; sink: StreamSink } {
    const sink = new StreamSink();
    const req = new RelayRequest({
      id: `r-${++seq}`,
      model: 'm',
      endpointPath: '/v1/chat/completions',
      isStreaming,
      body: '{}',
      headers: undefined,
      correlationId: 'c',
      tenant: 'default',
      priority: 1,
      sink,
      route: { model: 'm', requirements: extractRequirements('/v1/chat/completions', {}) },
    });
    h.dispatcher.submit(req);
    return { req, sink };
  }

  const frames = (channel: RecordingChannel, type: string) => channel.sent.filter((m) => m.type === type);
  const metric = async (kind: string) => {
    const m = await h.metrics.registry.getSingleMetric('switchboard_watchdog_total')!.get();
    return m.values.find((v) => v.labels.kind === kind)?.value ?? 0;
  };

  it('first byte: a silent worker gets cancel(timeout) at exactly the timeout, a health failure, and the request runs on another worker', async () => {
    const a = addWorker();
    const { req, sink } = submit();
    expect(req.worker?.id).toBe(a.worker.id);
    const b = addWorker();
    clock.advance(20 * SECOND - 1);
    expect(frames(a.channel, 'cancel')).toEqual([]);
    clock.advance(1);
    expect(frames(a.channel, 'cancel')).toEqual([{ type: 'cancel', request_id: req.id, reason: 'timeout' }]);
    expect(h.router.health.of(a.worker).consecutiveFailures).toBe(1);
    expect(frames(b.channel, 'request')).toHaveLength(1);
    expect(req.worker?.id).toBe(b.worker.id);
    expect(req.requeues).toBe(1);
    h.dispatcher.frames.onComplete(b.worker, { type: 'response_complete', request_id: req.id, status_code: 200, body: '{"from":"b"}' });
    expect(sink.complete).toBe(200);
    expect(sink.error).toBeUndefined();
    expect(h.dispatcher.watchdogs.counts).toEqual({ first_byte: 1, stream_idle: 0 });
    expect(await metric('first_byte')).toBe(1);
  });

  it('first byte: response_start, a chunk or a completion in time disarm it', () => {
    const a = addWorker();
    const started = submit(true);
    const chunked = submit(false);
    const done = submit(false);
    clock.advance(19 * SECOND);
    h.dispatcher.frames.onResponseStart(a.worker, { type: 'response_start', request_id: started.req.id, status_code: 200, headers: {} });
    h.dispatcher.frames.onChunk(a.worker, chunked.req.id, 'x');
    h.dispatcher.frames.onComplete(a.worker, { type: 'response_complete', request_id: done.req.id, status_code: 200, body: '{}' });
    clock.advance(60 * SECOND);
    expect(frames(a.channel, 'cancel').map((c) => (c as { request_id: string }).request_id)).toEqual([started.req.id]); // its stream then stalled
    expect(h.dispatcher.watchdogs.counts).toEqual({ first_byte: 0, stream_idle: 1 });
  });

  it('requeues at most the usual limit, then the client gets requeue_exhausted', () => {
    const a = addWorker();
    const { req, sink } = submit();
    for (let i = 0; i < 3; i++) {
      addWorker();
      clock.advance(20 * SECOND);
    }
    expect(req.requeues).toBe(3);
    expect(sink.error).toBeUndefined();
    clock.advance(20 * SECOND);
    expect(sink.error?.code).toBe('requeue_exhausted');
    expect(frames(a.channel, 'cancel')).toHaveLength(1);
  });

  it('stall: a started stream with no chunk for the idle timeout is cancelled and ends with a retriable DECODE_TIMEOUT error; chunks re-arm it', async () => {
    const a = addWorker();
    const { req, sink } = submit(true);
    h.dispatcher.frames.onChunk(a.worker, req.id, 'data: 1\n\n');
    for (let i = 0; i < 5; i++) {
      clock.advance(6 * SECOND);
      h.dispatcher.frames.onChunk(a.worker, req.id, 'data: more\n\n');
    }
    expect(sink.error).toBeUndefined();
    clock.advance(7 * SECOND - 1);
    expect(sink.error).toBeUndefined();
    clock.advance(1);
    expect(sink.error?.code).toBe('request_timeout');
    expect(sink.error?.details.fields).toMatchObject({ watchdog: 'stream_idle' });
    expect(sink.ended).toBe(false); // never an apparent success
    expect(frames(a.channel, 'cancel')).toEqual([{ type: 'cancel', request_id: req.id, reason: 'timeout' }]);
    expect(h.router.health.of(a.worker).consecutiveFailures).toBe(1);
    expect(await metric('stream_idle')).toBe(1);
  });

  it('stall: a collected (non-streaming) answer and a finished stream are not watched', () => {
    const a = addWorker();
    const collected = submit(false);
    const stream = submit(true);
    h.dispatcher.frames.onChunk(a.worker, collected.req.id, 'part');
    h.dispatcher.frames.onChunk(a.worker, stream.req.id, 'data: 1\n\n');
    h.dispatcher.frames.onComplete(a.worker, { type: 'response_complete', request_id: stream.req.id, status_code: 200 });
    clock.advance(100 * SECOND);
    expect(frames(a.channel, 'cancel')).toEqual([]);
    expect(stream.sink.ended).toBe(true);
    expect(h.dispatcher.watchdogs.counts).toEqual({ first_byte: 0, stream_idle: 0 });
  });

  it("first byte: a pool's own timeout (providers[].first_byte_timeout_secs) replaces the default", async () => {
    const config = loadConfig({ REQUEST_TIMEOUT_SECS: '600', PROVIDER_NAME: 'local', ROUTING_FIRST_BYTE_TIMEOUT_SECS: '20' });
    config.providers[0].models = ['m'];
    config.providers[0].firstByteTimeoutMs = 90 * SECOND;
    h = await dispatchHarness(config, clock);
    const a = addWorker();
    const { req } = submit();
    clock.advance(89 * SECOND);
    expect(frames(a.channel, 'cancel')).toEqual([]);
    clock.advance(SECOND);
    expect(frames(a.channel, 'cancel')).toEqual([{ type: 'cancel', request_id: req.id, reason: 'timeout' }]);
  });

  it("first byte: the pool's own timeout wins over the deprecated routing.first_byte_timeout_secs_per_pool, which still applies without it", async () => {
    const config = loadConfig({ REQUEST_TIMEOUT_SECS: '600', PROVIDER_NAME: 'local', ROUTING_FIRST_BYTE_TIMEOUT_SECS: '20' });
    config.providers[0].models = ['m'];
    config.routing.firstByteTimeoutMsByPool = new Map([['local', 90 * SECOND]]);
    h = await dispatchHarness(config, clock);
    const a = addWorker();
    const first = submit();
    clock.advance(89 * SECOND);
    expect(frames(a.channel, 'cancel')).toEqual([]);
    clock.advance(SECOND);
    expect(frames(a.channel, 'cancel')).toEqual([{ type: 'cancel', request_id: first.req.id, reason: 'timeout' }]);

    // Both set: the pool's own value decides.
    config.providers[0].firstByteTimeoutMs = 30 * SECOND;
    h = await dispatchHarness(config, clock);
    const b = addWorker();
    const second = submit();
    clock.advance(30 * SECOND - 1);
    expect(frames(b.channel, 'cancel')).toEqual([]);
    clock.advance(1);
    expect(frames(b.channel, 'cancel')).toEqual([{ type: 'cancel', request_id: second.req.id, reason: 'timeout' }]);
  });

  it('tasks (requests with bounds of their own) are not watched', () => {
    const a = addWorker();
    const sink = new StreamSink();
    const req = new RelayRequest({
      id: 'task-1',
      model: 'm',
      endpointPath: '/v1/chat/completions',
      isStreaming: true,
      body: '{}',
      headers: undefined,
      correlationId: 'c',
      tenant: 'default',
      priority: 1,
      sink,
      route: { model: 'm', requirements: extractRequirements('/v1/chat/completions', {}) },
      timeouts: { runMs: 3_600_000 },
    });
    h.dispatcher.submit(req);
    clock.advance(300 * SECOND);
    h.dispatcher.frames.onChunk(a.worker, req.id, 'data: 1\n\n');
    clock.advance(300 * SECOND);
    expect(frames(a.channel, 'cancel')).toEqual([]);
    expect(sink.error).toBeUndefined();
  });
});
