import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { JsonTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOnSampler, BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { AppConfig } from '../config';
import { Tracing } from './tracing.service';
import { OtlpWriter } from './otlp-json';

const T0 = 1_764_000_000_123;
/** Plain ASCII past the writer's short-text path. */
const LONG = 'a plain value, longer than the short-text path of the writer: '.repeat(3);
const CLIENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

/** A collector on a loopback port that keeps the bodies POSTed to it. */
async function collector(): Promise<{ server: Server; url: string; bodies: string[] }> {
  const bodies: string[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString('utf8')));
    req.on('end', () => {
      bodies.push(body);
      res.writeHead(200).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`, bodies };
}

const tracingTo = (url: string) => new Tracing({ instanceId: 'gw-test', telemetry: { tracesEndpoint: url, captureContent: false } } as AppConfig);

describe('the OTLP JSON the gateway exports', () => {
  let sink: Awaited<ReturnType<typeof collector>>;
  beforeEach(async () => (sink = await collector()));
  afterEach(() => sink.server.close());

  it('is what the OpenTelemetry SDK and its OTLP transformer make of the same spans', async () => {
    const tracing = tracingTo(sink.url);
    const parent = tracing.parentOf({ traceparent: CLIENT, tracestate: 'vendor=opaque' });
    const server = tracing.start('chat m', SpanKind.SERVER, parent, T0);
    server.set('gen_ai.request.model', 'm').set('switchboard.stream', false).set('gen_ai.request.max_tokens', 64).set('unset', undefined).set('long', LONG);
    const wait = tracing.child('queue wait', SpanKind.INTERNAL, server, T0 + 1).set('switchboard.pool', 'p');
    wait.end(T0 + 41);
    server.event('worker attempt', T0 + 41, ['switchboard.attempt', 1, 'switchboard.worker.name', 'gpu "7"\n\u00e9 \ud800']);
    server.event('first byte', T0 + 50.25);
    server.set('switchboard.ttfb_ms', 50.25).set('http.response.status_code', 502).set('error.type', 'worker_error');
    server.error('worker_error');
    server.end(T0 + 60);
    await tracing.onApplicationShutdown();

    // The same operations through the SDK, with the ids the gateway drew.
    const ids = [server.spanId, wait.spanId];
    const memory = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ 'service.name': 'switchboard', 'service.instance.id': 'gw-test' }),
      sampler: new AlwaysOnSampler(),
      idGenerator: { generateTraceId: () => 'unused', generateSpanId: () => ids.shift()! },
      spanProcessors: [new SimpleSpanProcessor(memory)],
    });
    const tracer = provider.getTracer('switchboard');
    const s = tracer.startSpan(
      'chat m',
      {
        kind: SpanKind.SERVER,
        startTime: T0,
        attributes: { 'gen_ai.request.model': 'm', 'switchboard.stream': false, 'gen_ai.request.max_tokens': 64, long: LONG },
      },
      parent,
    );
    tracer
      .startSpan('queue wait', { kind: SpanKind.INTERNAL, startTime: T0 + 1, attributes: { 'switchboard.pool': 'p' } }, trace.setSpan(ROOT_CONTEXT, s))
      .end(T0 + 41);
    s.addEvent('worker attempt', { 'switchboard.attempt': 1, 'switchboard.worker.name': 'gpu "7"\n\u00e9 \ud800' }, T0 + 41);
    s.addEvent('first byte', T0 + 50.25);
    s.setAttributes({ 'switchboard.ttfb_ms': 50.25, 'http.response.status_code': 502, 'error.type': 'worker_error' });
    s.setStatus({ code: SpanStatusCode.ERROR, message: 'worker_error' });
    s.end(T0 + 60);
    const expected = JSON.parse(new TextDecoder().decode(JsonTraceSerializer.serializeRequest(memory.getFinishedSpans())));

    expect(sink.bodies).toHaveLength(1);
    expect(JSON.parse(sink.bodies[0])).toEqual(expected);
    await provider.shutdown();
  });

  it('gives the worker the span context to pass on; an unsampled request gets flag 00 and exports nothing', async () => {
    process.env.OTEL_TRACES_SAMPLER = 'always_off';
    const tracing = tracingTo(sink.url);
    delete process.env.OTEL_TRACES_SAMPLER;
    const span = tracing.start('chat m', SpanKind.SERVER, tracing.parentOf({ traceparent: CLIENT }), T0);
    const headers: Record<string, string> = {};
    tracing.inject(span, headers);
    expect(headers.traceparent).toBe(`00-4bf92f3577b34da6a3ce929d0e0e4736-${span.spanId}-00`);
    expect(span.spanId).toMatch(/^[0-9a-f]{16}$/);
    expect(span.recording).toBe(false);
    span.set('k', 'v').end(T0 + 1);
    await tracing.onApplicationShutdown();
    expect(sink.bodies).toEqual([]);
  });
  it('writes whole numbers beyond 64-bit integers as doubles, so a client value cannot make the collector refuse a batch', () => {
    const kv = (v: number) => {
      const w = new OtlpWriter(Buffer.alloc(16)).keyValue('k', v);
      return JSON.parse(w.finish().body.toString('utf8')) as { value: Record<string, unknown> };
    };
    expect(kv(64).value).toEqual({ intValue: 64 });
    expect(kv(2 ** 64).value).toEqual({ doubleValue: 2 ** 64 });
    expect(kv(1e300).value).toEqual({ doubleValue: 1e300 });
    expect(kv(0.5).value).toEqual({ doubleValue: 0.5 });
  });
});
