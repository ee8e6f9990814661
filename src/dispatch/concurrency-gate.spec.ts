import { FakeClock } from '../../test/support/fake-clock';
import { DispatchHarness, dispatchHarness, RecordingChannel, workerSession } from '../../test/support/dispatch-harness';
import { loadConfig } from '../config';
import { GatewayError } from '../common/gateway-error';
import { extractRequirements } from '../routing/requirements';
import { WorkerSession } from '../fleet/worker-session';
import { ConcurrencyCap } from '../queue/concurrency-caps';
import { RelayRequest, ResponseSink } from './relay-request';

class Sink implements ResponseSink {
  clientGone = false;
  status: number | undefined;
  error: GatewayError | undefined;
  headers: Record<string, string> = {};
  readonly pendingBytes = 0;
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
  addHeaders(h: Record<string, string>) {
    Object.assign(this.headers, h);
  }
}

describe('ConcurrencyGate (fake clock, real Dispatcher, Router and queue)', () => {
  let clock: FakeClock;
  let h: DispatchHarness;
  let seq = 0;

  beforeEach(async () => {
    clock = new FakeClock();
    const config = loadConfig({ QUEUE_TIMEOUT_SECS: '30', REQUEST_TIMEOUT_SECS: '60', CANCEL_GRACE_SECS: '5', PROVIDER_NAME: 'local', MAX_QUEUE_LEN: '100' });
    config.providers[0].models = ['m', 'm2'];
    h = await dispatchHarness(config, clock);
  });

  function addWorker(models: string[], slots: number): { worker: WorkerSession; channel: RecordingChannel } {
    const channel = new RecordingChannel();
    const id = `w-${++seq}`;
    const worker = workerSession(id, 'local', id, models, slots, '127.0.0.1', clock.now(), channel);
    h.fleet.attach(worker);
    return { worker, channel };
  }

  function submit(caps: ConcurrencyCap<RelayRequest>[] | undefined, model = 'm', tenant = 'team'): { req: RelayRequest; sink: Sink } {
    const sink = new Sink();
    const req = new RelayRequest({
      id: `r-${++seq}`,
      model,
      endpointPath: '/v1/chat/completions',
      isStreaming: false,
      body: '{}',
      headers: undefined,
      correlationId: 'c',
      tenant,
      priority: 1,
      caps,
      sink,
      route: { model, requirements: extractRequirements('/v1/chat/completions', {}) },
    });
    h.dispatcher.submit(req);
    return { req, sink };
  }

  const complete = (worker: WorkerSession, req: RelayRequest) =>
    h.dispatcher.frames.onComplete(worker, { type: 'response_complete', request_id: req.id, status_code: 200, body: '{}' });

  it('a key at its cap waits in the queue while a worker is free; one ending lets the oldest waiting one run', () => {
    const { worker } = addWorker(['m'], 10);
    const caps = () => h.dispatcher.caps.capsFor('team', undefined, 'key-a', 2);
    const a = [submit(caps()), submit(caps()), submit(caps()), submit(caps())];
    const other = submit(h.dispatcher.caps.capsFor('team', undefined, 'key-b', undefined));
    expect(a.map((r) => r.req.phase)).toEqual(['assigned', 'assigned', 'queued', 'queued']);
    expect(other.req.phase).toBe('assigned');
    expect(a[0].sink.headers).toEqual({ 'x-concurrency-limit': '2', 'x-concurrency-in-flight': '1' });
    expect(a[2].sink.headers).toEqual({ 'x-concurrency-limit': '2', 'x-concurrency-in-flight': '2' });
    expect(h.dispatcher.caps.list()).toEqual([{ scope: 'key', id: 'key-a', tenant: 'team', limit: 2, in_flight: 2, waiting: 2 }]);
    complete(worker, a[1].req);
    expect(a.map((r) => r.req.phase)).toEqual(['assigned', 'finished', 'assigned', 'queued']);
    complete(worker, other.req);
    expect(a[3].req.phase).toBe('queued'); // another key's slot coming free does not pass the cap
    h.dispatcher.clientGone(a[0].req);
    expect(a[3].req.phase).toBe('assigned');
    expect(h.dispatcher.caps.list()[0]).toMatchObject({ in_flight: 2, waiting: 0 });
  });

  it("wakes a waiting request for another model on an idle worker (not only the freed worker's models)", () => {
    const busy = addWorker(['m'], 1);
    addWorker(['m2'], 1);
    const tenantCap = () => h.dispatcher.caps.capsFor('team', 1);
    const first = submit(tenantCap(), 'm');
    const second = submit(tenantCap(), 'm2');
    expect(second.req.phase).toBe('queued');
    complete(busy.worker, first.req);
    expect(second.req.phase).toBe('assigned');
    expect(second.req.targetModel).toBe('m2');
  });

  it('the tenant bound (max_queued) still refuses beyond it; a queue timeout of a waiting request frees nothing twice', () => {
    addWorker(['m'], 10);
    const caps = () => h.dispatcher.caps.capsFor('team', 1);
    const running = submit(caps());
    const waiting = submit(caps());
    expect(waiting.req.phase).toBe('queued');
    clock.advance(30_000);
    expect(waiting.sink.error?.code).toBe('queue_timeout');
    expect(h.dispatcher.caps.list()[0]).toMatchObject({ in_flight: 1, waiting: 0 });
    expect(running.req.phase).toBe('assigned');
  });

  it('a request requeued off its worker keeps its place under the cap (it has not ended)', () => {
    const a = addWorker(['m'], 5);
    const caps = () => h.dispatcher.caps.capsFor('team', undefined, 'k', 1);
    const first = submit(caps());
    const second = submit(caps());
    addWorker(['m'], 5);
    h.fleet.detach(a.worker); // the first is requeued to the other worker; the second still waits
    expect(first.req.phase).toBe('assigned');
    expect(first.req.requeues).toBe(1);
    expect(second.req.phase).toBe('queued');
    expect(h.dispatcher.caps.list()[0]).toMatchObject({ in_flight: 1, waiting: 1 });
  });
});
