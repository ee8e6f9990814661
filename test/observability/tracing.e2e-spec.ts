import { chat, eventually, post } from '../support/http';
import { startGateway, TestGateway } from '../support/gateway';
import { OtlpReceiver, ReceivedSpan } from '../support/otlp-receiver';
import { ScriptedWorker } from '../support/scripted-worker';

/** A phrase only ever in prompts and completions: no exported span may carry it by default. */
const CANARY = 'CANARY-trace-3b1e-never-export';
const CLIENT_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_SPAN = '00f067aa0ba902b7';
const OTLP_SERVER = 2;
const OTLP_INTERNAL = 1;

/** OTel SDK variables read from process.env by the SDK itself: fast batches for the test. */
const SDK_ENV = { OTEL_BSP_SCHEDULE_DELAY: '20' };

async function tracedGateway(receiver: OtlpReceiver, env: Record<string, string> = {}): Promise<{ gw: TestGateway; worker: ScriptedWorker }> {
  const gw = await startGateway({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, ...env });
  const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['traced-model'], max_concurrent: 2, worker_name: 'gpu-7' });
  return { gw, worker };
}

const ask = (gw: TestGateway, extra: Record<string, unknown>, headers: Record<string, string> = {}) =>
  post(gw.url, '/v1/chat/completions', chat('traced-model', { messages: [{ role: 'user', content: `${CANARY} hello` }], ...extra }), {
    'x-tenant-id': 'team-t',
    ...headers,
  });

describe('OpenTelemetry traces over OTLP/HTTP (issue 21)', () => {
  let receiver: OtlpReceiver;
  let gw: TestGateway;
  let worker: ScriptedWorker;
  const saved: Record<string, string | undefined> = {};

  beforeAll(async () => {
    for (const [k, v] of Object.entries(SDK_ENV)) {
      saved[k] = process.env[k];
      process.env[k] = v;
    }
    receiver = await OtlpReceiver.start();
    ({ gw, worker } = await tracedGateway(receiver));
  });

  afterAll(async () => {
    worker?.close();
    await gw?.close();
    await receiver?.close();
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });

  /** The spans of a trace once its server span arrived. */
  async function traceOf(traceId: string): Promise<{ server: ReceivedSpan; spans: ReceivedSpan[] }> {
    const server = (await eventually(() => receiver.trace(traceId).find((s) => s.kind === OTLP_SERVER), 5000, `server span of ${traceId}`)) as ReceivedSpan;
    return { server, spans: receiver.trace(traceId) };
  }

  it('honours an incoming traceparent, forwards its own to the worker, and exports GenAI spans', async () => {
    const pending = ask(gw, { max_tokens: 64 }, { traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01` });
    const req = await worker.next('request');
    // The worker gets a traceparent of the same trace, naming the gateway's server span.
    const forwarded = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(req.headers.traceparent);
    expect(forwarded?.[1]).toBe(CLIENT_TRACE);
    expect(forwarded?.[2]).not.toBe(CLIENT_SPAN);
    worker.complete(req.request_id, { choices: [{ message: { content: `${CANARY} hi` } }] }, 200, {
      token_counts: { prompt_tokens: 11, completion_tokens: 5, total_tokens: 16 },
    });
    expect((await pending).status).toBe(200);

    const { server, spans } = await traceOf(CLIENT_TRACE);
    expect(server.parentSpanId).toBe(CLIENT_SPAN);
    expect(server.name).toBe('chat traced-model');
    expect(server.resource['service.name']).toBe('switchboard');
    expect(server.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': 'traced-model',
      'gen_ai.response.model': 'traced-model',
      'gen_ai.request.max_tokens': 64,
      'gen_ai.usage.input_tokens': 11,
      'gen_ai.usage.output_tokens': 5,
      'switchboard.stream': false,
      'switchboard.tenant': 'team-t',
      'switchboard.pool': 'local',
      'switchboard.worker.name': 'gpu-7',
      'switchboard.queue.wait_ms': 0,
      'switchboard.requeues': 0,
      'http.response.status_code': 200,
    });
    expect(typeof server.attributes['switchboard.ttfb_ms']).toBe('number');
    expect(server.spanId).toBe(forwarded?.[2]);
    // Dispatched at once: no queue-wait span; the attempt and the first byte are events.
    expect(spans).toHaveLength(1);
    // Admission (key, body, limits) is inside the server span, up to its `admitted` event.
    expect(server.events.map((e) => e.name)).toEqual(['worker attempt', 'admitted', 'first byte']);
    expect(server.events[0].attributes).toMatchObject({ 'switchboard.worker.name': 'gpu-7', 'switchboard.pool': 'local', 'switchboard.attempt': 1 });
  });

  it('starts a new trace without a traceparent; a streamed request and a queue wait get their spans', async () => {
    // Two slots: fill them, so the third request waits in the queue.
    const first = ask(gw, {});
    const second = ask(gw, {});
    const [a, b] = [await worker.next('request'), await worker.next('request')];
    const streamed = ask(gw, { stream: true });
    await new Promise((r) => setTimeout(r, 50));
    worker.complete(a.request_id, { ok: true });
    const c = await worker.next('request');
    worker.chunk(c.request_id, `data: ${JSON.stringify({ choices: [{ delta: { content: CANARY } }] })}\n\n`);
    worker.send({ type: 'response_complete', request_id: c.request_id, status_code: 200 });
    worker.complete(b.request_id, { ok: true });
    expect((await first).status).toBe(200);
    expect((await second).status).toBe(200);
    expect((await streamed).status).toBe(200);

    const traceId = /^00-([0-9a-f]{32})-/.exec(c.headers.traceparent)![1];
    expect(traceId).not.toBe(CLIENT_TRACE);
    const { server, spans } = await traceOf(traceId);
    expect(server.parentSpanId).toBeUndefined();
    expect(server.attributes['switchboard.stream']).toBe(true);
    expect(server.attributes['switchboard.queue.position']).toBe(1);
    expect(server.attributes['switchboard.queue.wait_ms']).toBeGreaterThanOrEqual(40);
    const wait = spans.find((s) => s.name === 'queue wait')!;
    expect(wait.parentSpanId).toBe(server.spanId);
    expect(wait.endMs - wait.startMs).toBeGreaterThanOrEqual(40);
    expect(wait.kind).toBe(OTLP_INTERNAL);
    // Admission (key, body, limits) is inside the server span, up to its `admitted` event.
    expect(server.events.map((e) => e.name)).toEqual(['worker attempt', 'admitted', 'first byte']);
  });

  it('marks a failed request and its attempt as errors', async () => {
    const pending = ask(gw, {});
    const req = await worker.next('request');
    worker.send({ type: 'error', request_id: req.request_id, code: 'backend_response_failed', message: 'reset' });
    expect((await pending).status).toBe(502);
    const { server } = await traceOf(/^00-([0-9a-f]{32})-/.exec(req.headers.traceparent)![1]);
    expect(server.status.code).toBe(2);
    expect(server.attributes['http.response.status_code']).toBe(502);
    expect(server.attributes['error.type']).toBe('worker_error');
  });

  it("a client's error (4xx) names its type but leaves the server span's status unset (HTTP conventions)", async () => {
    const res = await post(gw.url, '/v1/chat/completions', chat('no-such-model'), {
      'x-tenant-id': 'team-t',
      traceparent: `00-${'4'.repeat(32)}-${CLIENT_SPAN}-01`,
    });
    expect(res.status).toBe(404);
    const { server } = await traceOf('4'.repeat(32));
    expect(server.attributes['error.type']).toBe('model_not_found');
    expect(server.events.map((e) => e.name)).toContain('rejected');
    expect(server.status.code ?? 0).toBe(0);
  });

  it('a requeue shows as a lost worker and a second attempt, with the same traceparent to both workers', async () => {
    // The first worker is busy; a second one (only slot) takes the request, then vanishes.
    const { worker: flaky } = await ScriptedWorker.register(gw.workerUrl, { models: ['flaky-model'], worker_name: 'flaky' });
    const { worker: steady } = await ScriptedWorker.register(gw.workerUrl, { models: ['flaky-model'], worker_name: 'steady' });
    try {
      const pending = post(gw.url, '/v1/chat/completions', chat('flaky-model'), { 'x-tenant-id': 'team-t' });
      const got = await ScriptedWorker.firstOf([flaky, steady], 'request');
      const other = got.worker === flaky ? steady : flaky;
      got.worker.kill();
      const again = await other.next('request');
      expect(again.headers.traceparent).toBe(got.frame.headers.traceparent);
      other.complete(again.request_id, { ok: true });
      expect((await pending).status).toBe(200);
      const { server } = await traceOf(/^00-([0-9a-f]{32})-/.exec(again.headers.traceparent)![1]);
      expect(server.events.map((e) => e.name)).toEqual(['worker attempt', 'worker lost', 'worker attempt', 'admitted', 'first byte']);
      expect(server.events[2].attributes['switchboard.attempt']).toBe(2);
      expect(server.attributes['switchboard.requeues']).toBe(1);
    } finally {
      flaky.close();
      steady.close();
    }
  });

  it('exports nothing of the prompt or the completion by default', async () => {
    await eventually(() => receiver.spans.length >= 6);
    expect(receiver.bodies.join('\n')).not.toContain(CANARY);
    expect(receiver.bodies.join('\n')).not.toContain('hello');
  });

  it('samples by OTEL_TRACES_SAMPLER: always_off exports nothing, the worker still gets an unsampled traceparent', async () => {
    process.env.OTEL_TRACES_SAMPLER = 'always_off';
    const { gw: unsampled, worker: w } = await tracedGateway(receiver).finally(() => delete process.env.OTEL_TRACES_SAMPLER);
    try {
      const pending = ask(unsampled, {});
      const req = await w.next('request');
      w.complete(req.request_id, { ok: true });
      expect((await pending).status).toBe(200);
      const [, traceId] = /^00-([0-9a-f]{32})-[0-9a-f]{16}-00$/.exec(req.headers.traceparent)!;
      await new Promise((r) => setTimeout(r, 200));
      expect(receiver.trace(traceId)).toEqual([]);
    } finally {
      w.close();
      await unsampled.close();
    }
  });

  it('records the prompt only with telemetry.capture_content', async () => {
    const { gw: capturing, worker: w } = await tracedGateway(receiver, { TELEMETRY_CAPTURE_CONTENT: 'true' });
    try {
      const pending = ask(capturing, {});
      const req = await w.next('request');
      w.complete(req.request_id, { ok: true });
      expect((await pending).status).toBe(200);
      const { server } = await traceOf(/^00-([0-9a-f]{32})-/.exec(req.headers.traceparent)![1]);
      expect(server.attributes['gen_ai.input.messages']).toContain(CANARY);
    } finally {
      w.close();
      await capturing.close();
    }
  });
});
