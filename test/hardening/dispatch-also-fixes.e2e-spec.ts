/**
 * Dispatcher fixes from the hardening review (issue 16, "Also fix"), on the real Dispatcher over
 * real routing and queueing with a fake clock: a queued request follows its fallback when its
 * model's last worker leaves; a client gone during an async admission check is recorded as 499; a
 * pong that crossed newly sent requests frees no held slot early; a pool drain's reroute records
 * the queue wait once.
 */
import { FakeClock } from '../support/fake-clock';
import { dispatchHarness, DispatchHarness, RecordingChannel, workerSession } from '../support/dispatch-harness';
import { loadConfig } from '../../src/config';
import { Errors, GatewayError } from '../../src/common/gateway-error';
import { extractRequirements } from '../../src/routing/requirements';
import { WorkerSession } from '../../src/fleet/worker-session';
import { RelayRequest, ResponseSink } from '../../src/dispatch/relay-request';
import { UsageRecord } from '../../src/usage/usage-record';

class RecordingSink implements ResponseSink {
  clientGone = false;
  readonly pendingBytes = 0;
  error: GatewayError | undefined;
  status: number | undefined;
  startStream() {}
  writeChunk() {
    return true;
  }
  onDrain() {}
  abort() {}
  endStream() {}
  sendComplete(status: number) {
    this.status = status;
  }
  fail(error: GatewayError) {
    this.error = error;
  }
  routed() {}
  queueWaited() {}
}

describe('dispatcher hardening: also-fix items', () => {
  let clock: FakeClock;
  let h: DispatchHarness;
  let usage: UsageRecord[];
  let seq = 0;

  async function setup(env: Record<string, string>, models: string[]): Promise<void> {
    clock = new FakeClock();
    usage = [];
    const config = loadConfig({ QUEUE_TIMEOUT_SECS: '10', REQUEST_TIMEOUT_SECS: '60', CANCEL_GRACE_SECS: '30', PROVIDER_NAME: 'local', ...env });
    config.providers[0].models = models;
    h = await dispatchHarness(config, clock, { record: (r) => usage.push(r) });
  }

  function addWorker(models: string[], maxConcurrent: number): { worker: WorkerSession; channel: RecordingChannel } {
    const channel = new RecordingChannel();
    const id = `w-${++seq}`;
    const worker = workerSession(id, 'local', id, models, maxConcurrent, '127.0.0.1', clock.now(), channel);
    h.fleet.attach(worker);
    return { worker, channel };
  }

  function request(model: string): { req: RelayRequest; sink: RecordingSink } {
    const sink = new RecordingSink();
    const req = new RelayRequest({
      id: `r-${++seq}`,
      model,
      endpointPath: '/v1/chat/completions',
      isStreaming: false,
      body: `{"model":"${model}"}`,
      headers: undefined,
      correlationId: 'c',
      tenant: 'default',
      priority: 1,
      sink,
      route: { model, requirements: extractRequirements('/v1/chat/completions', {}) },
    });
    return { req, sink };
  }

  function submit(model: string): { req: RelayRequest; sink: RecordingSink } {
    const r = request(model);
    h.dispatcher.submit(r.req);
    return r;
  }

  const sentRequests = (c: RecordingChannel) => c.sent.filter((m) => m.type === 'request') as Array<{ request_id: string; model: string }>;

  it("re-plans a queued request onto its fallback's idle worker when its model's last worker leaves", async () => {
    await setup({ ROUTING_FALLBACKS: 'big=small' }, ['big', 'small']);
    const big = addWorker(['big'], 1);
    const small = addWorker(['small'], 2);
    const running = submit('big');
    const waiting = submit('big'); // big's only worker is busy: it waits for big
    expect(h.queue.depth('local')).toBe(1);
    h.fleet.detach(big.worker);
    // Both go to the fallback's idle worker at once, instead of waiting for 'big' until queue_timeout.
    expect(sentRequests(small.channel).map((m) => [m.request_id, m.model])).toEqual([
      [running.req.id, 'small'],
      [waiting.req.id, 'small'],
    ]);
    expect(h.queue.depth('local')).toBe(0);
    clock.advance(10_000);
    expect(waiting.sink.error).toBeUndefined();
    h.dispatcher.frames.onComplete(small.worker, { type: 'response_complete', request_id: waiting.req.id, status_code: 200, body: '{}' });
    expect(waiting.sink.status).toBe(200);
  });

  it("re-plans the same way when the model's last worker stops advertising it (models_update)", async () => {
    await setup({ ROUTING_FALLBACKS: 'big=small' }, ['big', 'small']);
    const big = addWorker(['big', 'other'], 1);
    const small = addWorker(['small'], 1);
    submit('big');
    const waiting = submit('big');
    h.fleet.onModelsChanged(big.worker, { models: ['other'] }); // 'big' was unloaded
    expect(sentRequests(small.channel).map((m) => [m.request_id, m.model])).toEqual([[waiting.req.id, 'small']]);
    expect(h.queue.depth('local')).toBe(0);
  });

  it("a request re-planned onto another provider's idle worker belongs to that provider: deleting it fails the request provider_deleted", async () => {
    clock = new FakeClock();
    usage = [];
    const config = loadConfig({
      QUEUE_TIMEOUT_SECS: '10',
      REQUEST_TIMEOUT_SECS: '60',
      CANCEL_GRACE_SECS: '30',
      PROVIDER_NAME: 'local',
      ROUTING_FALLBACKS: 'big=small',
    });
    config.providers[0].models = ['big'];
    config.providers.push({ ...config.providers[0], name: 'p2', models: ['small'] });
    h = await dispatchHarness(config, clock, { record: (r) => usage.push(r) });
    const big = addWorker(['big'], 1);
    const smallChannel = new RecordingChannel();
    const small = workerSession('w-p2', 'p2', 'w-p2', ['small'], 2, '127.0.0.1', clock.now(), smallChannel);
    h.fleet.attach(small);
    submit('big');
    const waiting = submit('big');
    expect(waiting.req.provider.name).toBe('local');
    h.fleet.detach(big.worker);
    expect(sentRequests(smallChannel).map((m) => m.request_id)).toContain(waiting.req.id);
    expect(waiting.req.provider.name).toBe('p2'); // metrics, usage and deletion name where it runs
    await h.providers.remove('p2');
    expect(waiting.sink.error?.code).toBe('provider_deleted');
    expect(usage.find((u) => u.id === waiting.req.id)).toMatchObject({ provider: 'p2' });
  });

  it('keeps a queued request waiting for its model when no fallback can take it either', async () => {
    await setup({ ROUTING_FALLBACKS: 'big=small' }, ['big', 'small']);
    const big = addWorker(['big'], 1);
    submit('big');
    const waiting = submit('big');
    h.fleet.detach(big.worker); // 'small' has no worker: nothing to move to
    expect(waiting.req.phase).toBe('queued');
    expect(waiting.sink.error).toBeUndefined();
    const back = addWorker(['big'], 2);
    expect(sentRequests(back.channel).map((m) => m.request_id)).toContain(waiting.req.id);
  });

  it('records a client that left during an async admission check as 499, once, in metrics and usage', async () => {
    await setup({}, ['m']);
    addWorker(['m'], 1);
    const finished = jest.spyOn(h.metrics, 'requestFinished');
    // As the inference route does: the client's close arrives while the limiter is still answering.
    const { req, sink } = request('m');
    sink.clientGone = true;
    h.dispatcher.clientGone(req);
    expect(finished).toHaveBeenCalledTimes(1);
    expect(finished.mock.calls[0][0]).toMatchObject({ status: 499, model: '(unrouted)' });
    expect(usage).toHaveLength(1);
    expect(usage[0]).toMatchObject({ status: 499 });
    // The limiter's late answer (a refusal here) records nothing more and answers nobody.
    h.dispatcher.reject(req, Errors.rateLimitExceeded('requests', { limit: 1, remaining: 0, resetAt: clock.now() + 1000, retryAfterMs: 1000 }));
    expect(finished).toHaveBeenCalledTimes(1);
    expect(usage).toHaveLength(1);
    expect(sink.error).toBeUndefined();
  });

  it('a pong that answers a ping sent before new requests does not free a held slot early; a later pong does', async () => {
    await setup({}, ['m']);
    const { worker, channel } = addWorker(['m'], 2);
    const cancelled = submit('m');
    cancelled.sink.clientGone = true;
    h.dispatcher.clientGone(cancelled.req); // slot held: the worker may still be running it
    worker.pingSent(); // the link pings; the worker then counts only what it had: the cancelled one
    const fresh = submit('m'); // sent after the ping
    expect(sentRequests(channel)).toHaveLength(2);
    h.fleet.onPong(worker, 1); // "1 active" = the cancelled one, not yet stopped
    expect(worker.held.has(cancelled.req.id)).toBe(true);
    expect(worker.freeSlots).toBe(0);
    const third = submit('m');
    expect(sentRequests(channel)).toHaveLength(2); // no third request on a 2-slot worker
    // The next ping crosses nothing: its pong's "1 active" is the fresh request, so the held slot goes.
    worker.pingSent();
    h.fleet.onPong(worker, 1);
    expect(worker.held.has(cancelled.req.id)).toBe(false);
    expect(sentRequests(channel).map((m) => m.request_id)).toEqual([cancelled.req.id, fresh.req.id, third.req.id]);
  });

  it("more than 32 unanswered pings: later pongs never take a newer ping's mark, so no held slot is freed early", async () => {
    await setup({}, ['m']);
    const { worker, channel } = addWorker(['m'], 2);
    const cancelled = submit('m');
    cancelled.sink.clientGone = true;
    h.dispatcher.clientGone(cancelled.req); // slot held
    // 40 pings go out while the worker answers none (a long stream keeps it alive); requests are
    // sent between the last ones, so their marks count them.
    for (let i = 0; i < 40; i++) {
      worker.pingSent();
      if (i === 35) submit('m');
    }
    expect(sentRequests(channel)).toHaveLength(2);
    // Each pong answers the oldest ping, sent before the fresh request: "1 active" is the cancelled
    // one, so none of them may free its slot (with dropped marks, pong 33+ took a newer mark and did).
    for (let i = 0; i < 36; i++) h.fleet.onPong(worker, 1);
    expect(worker.held.has(cancelled.req.id)).toBe(true);
    // The pongs of pings sent after the fresh request: "1 active" is the fresh one, the held slot goes.
    h.fleet.onPong(worker, 1);
    expect(worker.held.has(cancelled.req.id)).toBe(false);
  });

  it('a models_update load (moment unknown) frees no held slot; its grace period still does', async () => {
    await setup({}, ['m']);
    const { worker } = addWorker(['m'], 1);
    const cancelled = submit('m');
    cancelled.sink.clientGone = true;
    h.dispatcher.clientGone(cancelled.req);
    h.fleet.onModelsChanged(worker, { models: ['m'], currentLoad: 0 });
    expect(worker.held.has(cancelled.req.id)).toBe(true);
    clock.advance(30_000);
    expect(worker.held.size).toBe(0);
  });

  it("a pool drain's reroute records the request's queue wait once, with the whole wait", async () => {
    await setup({}, ['m']);
    const { worker } = addWorker(['m'], 1);
    const waits = jest.spyOn(h.metrics, 'queueWait');
    const first = submit('m'); // at once: one zero-wait observation
    const rerouted = submit('m');
    clock.advance(2_000);
    h.dispatcher.rerouteWaiting('local'); // routed again as if it had just arrived: it waits on
    clock.advance(3_000);
    h.dispatcher.frames.onComplete(worker, { type: 'response_complete', request_id: first.req.id, status_code: 200, body: '{}' });
    expect(worker.assigned.has(rerouted.req.id)).toBe(true);
    expect(waits.mock.calls.map((c) => c[1])).toEqual([0, 5]);
    expect(rerouted.req.waitedMs).toBe(5_000);
  });

  it("a pool drain's reroute straight to a free worker records the carried wait once, not again as zero", async () => {
    await setup({}, ['m']);
    const { worker } = addWorker(['m'], 1);
    const waits = jest.spyOn(h.metrics, 'queueWait');
    const first = submit('m');
    const rerouted = submit('m');
    clock.advance(2_000);
    // The slot frees without pulling work (a draining worker's completion), then the reroute finds it.
    worker.draining = true;
    h.dispatcher.frames.onComplete(worker, { type: 'response_complete', request_id: first.req.id, status_code: 200, body: '{}' });
    worker.draining = false;
    h.dispatcher.rerouteWaiting('local');
    expect(worker.assigned.has(rerouted.req.id)).toBe(true);
    expect(waits.mock.calls.map((c) => c[1])).toEqual([0, 2]);
  });
});
