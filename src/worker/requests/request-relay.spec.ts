import { Features, RequestMessage, WorkerToServerMessage } from '../../protocol';
import { FakeClock } from '../../../test/support/fake-clock';
import { RecordingLogger } from '../../../test/worker/support/recording-logger';
import { RelayChannel } from './channel';
import { RequestRelay } from './request-relay';
import { ResponseSink } from './request-runner';

class FakeChannel implements RelayChannel {
  open = true;
  draining = false;
  features: ReadonlySet<string> = new Set([Features.RESPONSE_START]);
  advertisedEndpoints?: string[];
  bufferedAmount = 0;
  readonly frames: WorkerToServerMessage[] = [];
  /** Write callbacks held back, as if the socket buffer were full. */
  readonly unwritten: Array<() => void> = [];
  holdWrites = false;

  send(message: WorkerToServerMessage, onWritten?: () => void): boolean {
    if (!this.open) return false;
    this.frames.push(message);
    if (onWritten) {
      if (this.holdWrites) this.unwritten.push(onWritten);
      else onWritten();
    }
    return true;
  }
}

/** A backend call the test finishes by hand. */
interface Call {
  request: RequestMessage;
  signal: AbortSignal;
  sink: ResponseSink;
  finish(): void;
}

function setup(maxConcurrency = 1) {
  const clock = new FakeClock();
  const log = new RecordingLogger();
  const calls: Call[] = [];
  let stopping = false;
  let settled = 0;
  const relay = new RequestRelay({
    maxConcurrency,
    run: (request, signal, sink) =>
      new Promise<void>((resolve) => {
        calls.push({ request, signal, sink, finish: resolve });
      }),
    stopping: () => stopping,
    settled: () => settled++,
    clock,
    log,
  });
  return {
    clock,
    log,
    relay,
    calls,
    channel: new FakeChannel(),
    stop: () => (stopping = true),
    settledCount: () => settled,
  };
}

function request(id: string, over: Partial<RequestMessage> = {}): RequestMessage {
  return { type: 'request', request_id: id, model: 'm', endpoint_path: '/v1/chat/completions', is_streaming: false, body: '{}', ...over };
}

const flush = () => new Promise<void>((r) => setImmediate(r));

describe('RequestRelay (fake clock)', () => {
  it('runs up to max_concurrency, queues as many more locally, and answers 503 beyond that', async () => {
    const t = setup(1);
    t.relay.accept(t.channel, request('a'));
    t.relay.accept(t.channel, request('b'));
    t.relay.accept(t.channel, request('c'));
    expect(t.calls.map((c) => c.request.request_id)).toEqual(['a']);
    expect([t.relay.running, t.relay.queued, t.relay.load]).toEqual([1, 1, 2]);
    expect(t.channel.frames).toEqual([expect.objectContaining({ type: 'response_complete', request_id: 'c', status_code: 503 })]);
    expect(JSON.parse((t.channel.frames[0] as { body: string }).body).error.code).toBe('worker_at_capacity');

    t.calls[0].sink.complete({ status_code: 200, body: 'ok' });
    t.calls[0].finish();
    await flush();
    expect(t.calls.map((c) => c.request.request_id)).toEqual(['a', 'b']);
    expect([t.relay.running, t.relay.queued, t.relay.load]).toEqual([1, 0, 1]);
    expect(t.settledCount()).toBe(1);
  });

  it('reports the duration on the clock and sends response_start only when the gateway accepted it', async () => {
    const t = setup();
    t.relay.accept(t.channel, request('a', { is_streaming: true }));
    t.clock.advance(1_234);
    const { sink } = t.calls[0];
    sink.start?.(200, { 'content-type': 'text/event-stream' });
    await sink.chunk('data: x\n\n');
    sink.complete({ status_code: 200 });
    expect(t.channel.frames.map((f) => f.type)).toEqual(['response_start', 'response_chunk', 'response_complete']);
    expect(t.log.lines.find((l) => l.msg === 'request completed')?.fields).toMatchObject({ duration_ms: 1_234, chunks: 1 });

    const old = setup();
    old.channel.features = new Set();
    old.relay.accept(old.channel, request('a', { is_streaming: true }));
    old.calls[0].sink.start?.(200, undefined);
    expect(old.channel.frames).toEqual([]);
  });

  it('holds the backend stream while the socket buffer is over the high-water mark', async () => {
    const t = setup();
    t.relay.accept(t.channel, request('a', { is_streaming: true }));
    t.channel.bufferedAmount = 2 << 20;
    t.channel.holdWrites = true;
    let written = false;
    void (t.calls[0].sink.chunk('big') as Promise<void>).then(() => (written = true));
    await flush();
    expect(written).toBe(false);
    t.channel.unwritten.forEach((f) => f());
    await flush();
    expect(written).toBe(true);
  });

  it('refuses a duplicate id without naming it, and leaves the first copy running', () => {
    const t = setup(2);
    t.relay.accept(t.channel, request('a'));
    t.relay.accept(t.channel, request('a'));
    expect(t.calls).toHaveLength(1);
    expect(t.channel.frames).toEqual([expect.objectContaining({ type: 'error', code: 'duplicate_request_id' })]);
    expect(t.channel.frames[0]).not.toHaveProperty('request_id');
  });

  it('refuses a path that is not an advertised inference endpoint, without calling the backend', () => {
    const t = setup();
    t.relay.accept(t.channel, request('a', { endpoint_path: '/api/pull' }));
    t.channel.advertisedEndpoints = ['/v1/completions'];
    t.relay.accept(t.channel, request('b'));
    expect(t.calls).toHaveLength(0);
    expect(t.channel.frames.map((f) => (f as { code?: string }).code)).toEqual(['endpoint_not_allowed', 'endpoint_not_allowed']);
  });

  it('answers 503 worker_draining while the link drains or the worker stops', () => {
    const t = setup();
    t.channel.draining = true;
    t.relay.accept(t.channel, request('a'));
    t.channel.draining = false;
    t.stop();
    t.relay.accept(t.channel, request('b'));
    expect(t.calls).toHaveLength(0);
    const codes = t.channel.frames.map((f) => JSON.parse((f as { body: string }).body).error.code);
    expect(codes).toEqual(['worker_draining', 'worker_draining']);
  });

  it('cancel aborts a running request, drops a queued one, and answers 499 for both', () => {
    const t = setup(1);
    t.relay.accept(t.channel, request('a'));
    t.relay.accept(t.channel, request('b'));
    t.relay.cancel({ type: 'cancel', request_id: 'b', reason: 'client_disconnect' });
    t.relay.cancel({ type: 'cancel', request_id: 'a', reason: 'client_disconnect' });
    t.relay.cancel({ type: 'cancel', request_id: 'zzz', reason: 'client_disconnect' });
    expect(t.calls[0].signal.aborted).toBe(true);
    expect(t.channel.frames).toEqual([
      expect.objectContaining({ type: 'response_complete', request_id: 'b', status_code: 499 }),
      expect.objectContaining({ type: 'response_complete', request_id: 'a', status_code: 499 }),
    ]);
    expect([t.relay.load, t.relay.queued]).toEqual([0, 0]);
    expect(t.settledCount()).toBe(2);
    // The runner's late answer for an aborted request goes nowhere.
    t.calls[0].sink.complete({ status_code: 200 });
    expect(t.channel.frames).toHaveLength(2);
  });

  it('a lost link aborts only its own requests', () => {
    const t = setup(1);
    const other = new FakeChannel();
    t.relay.accept(t.channel, request('a'));
    t.relay.accept(other, request('b'));
    t.relay.dropAll(t.channel);
    expect(t.calls[0].signal.aborted).toBe(true);
    expect(t.relay.load).toBe(1);
    expect(t.relay.queued).toBe(1);
    expect(t.log.messages('warn')).toContain('connection lost with a request in flight; aborting it');
  });

  it('at the shutdown deadline reports only requests with chunks already relayed; the others are left for the gateway to requeue', () => {
    const t = setup(2);
    t.relay.accept(t.channel, request('streamed', { is_streaming: true }));
    t.relay.accept(t.channel, request('waiting'));
    t.relay.accept(t.channel, request('queued'));
    void t.calls[0].sink.chunk('data: 1\n\n');
    t.relay.abortAll(t.channel);
    expect(t.calls.every((c) => c.signal.aborted)).toBe(true);
    expect(t.channel.frames.filter((f) => f.type === 'error')).toEqual([expect.objectContaining({ request_id: 'streamed', code: 'worker_shutting_down' })]);
    expect([t.relay.load, t.relay.queued]).toEqual([0, 0]);
  });

  it('fails a request whose relay crashed instead of the process', async () => {
    const t = setup();
    const relay = new RequestRelay({
      maxConcurrency: 1,
      run: () => Promise.reject(new Error('bug')),
      stopping: () => false,
      settled: () => undefined,
      clock: t.clock,
      log: t.log,
    });
    relay.accept(t.channel, request('a'));
    await flush();
    expect(t.channel.frames).toEqual([expect.objectContaining({ type: 'error', request_id: 'a', code: 'worker_internal_error' })]);
    expect(relay.load).toBe(0);
  });
});
