import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { Attributes, Context, isSpanContextValid, Link, ROOT_CONTEXT, SpanKind, trace } from '@opentelemetry/api';
import { getNumberFromEnv, W3CTraceContextPropagator } from '@opentelemetry/core';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { Sampler, SamplingDecision } from '@opentelemetry/sdk-trace-base';
import { APP_CONFIG, AppConfig } from '../config';
import { OtlpHttpJsonExporter, otlpOptionsFromEnv } from './otlp-http-exporter';
import { AttrValue, writeBodyStart } from './otlp-json';
import { samplerFromEnv } from './sampler';
import { batchOptionsFromEnv, SpanBatcher } from './span-batcher';
import { SpanIds } from './span-ids';
import { SpanLimits, TraceSpan } from './trace-span';

const SERVICE_NAME = 'switchboard';
const propagator = new W3CTraceContextPropagator();
const NO_ATTRIBUTES: Attributes = Object.freeze({}) as Attributes;
const NO_LINKS: Link[] = [];
// Read once: the SDK's index exports it through a getter.
const SAMPLED = SamplingDecision.RECORD_AND_SAMPLED;

const headerGetter = {
  get: (carrier: Record<string, string>, key: string) => carrier[key],
  keys: (carrier: Record<string, string>) => Object.keys(carrier),
};

/**
 * OpenTelemetry traces, exported over OTLP/HTTP when `OTEL_EXPORTER_OTLP_ENDPOINT` (or
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set. Off, `enabled` is false and nothing else is made:
 * the request observer that makes spans is not even registered (no cost on the hot path).
 *
 * Spans are the gateway's own lean ones (trace-span.ts), encoded to OTLP JSON as they are recorded
 * and batched like the SDK's BatchSpanProcessor does (span-batcher.ts): the SDK's span objects
 * and their batch-long retention were most of tracing's cost (docs/enterprise.md#cost). What the
 * standard asks of an SDK is kept: the sampler is the SDK's, built from `OTEL_TRACES_SAMPLER(_ARG)`;
 * an incoming `traceparent` is parsed by the SDK's W3C propagator; `OTEL_BSP_*`,
 * `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES` and the span value-length and event-count
 * limits apply; the exporter reads `OTEL_EXPORTER_OTLP_(TRACES_)HEADERS` and `_TIMEOUT`.
 */
@Injectable()
export class Tracing implements OnApplicationShutdown {
  private readonly batcher: SpanBatcher | undefined;
  private readonly sampler: Sampler | undefined;
  private readonly ids = new SpanIds();
  private readonly limits: SpanLimits;
  readonly captureContent: boolean;
  private readonly log = new Logger('Tracing');

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.captureContent = config.telemetry.captureContent;
    this.limits = {
      valueLength: getNumberFromEnv('OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT') ?? getNumberFromEnv('OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT') ?? Infinity,
      events: getNumberFromEnv('OTEL_SPAN_EVENT_COUNT_LIMIT') ?? 128,
    };
    const url = config.telemetry.tracesEndpoint;
    if (!url) return;
    this.sampler = samplerFromEnv();
    const exporter = new OtlpHttpJsonExporter(otlpOptionsFromEnv(url));
    const resource = resourceAttributes(config.instanceId);
    this.batcher = new SpanBatcher(
      exporter,
      (w) => writeBodyStart(w, resource, SERVICE_NAME),
      batchOptionsFromEnv(),
      (m) => this.log.warn(m),
    );
    // The collector URL may carry credentials (user:password@): they are never logged.
    this.log.log(`tracing to ${withoutCredentials(url)}`);
  }

  get enabled(): boolean {
    return this.batcher !== undefined;
  }

  /** The context an incoming `traceparent` (and `tracestate`) names; the root context without one. */
  parentOf(headers: Record<string, string> | undefined): Context {
    return headers?.traceparent ? propagator.extract(ROOT_CONTEXT, headers, headerGetter) : ROOT_CONTEXT;
  }

  /** A span under `parent` (a remote parent, or none), sampled as the sampler decides. Only called while enabled. */
  start(name: string, kind: SpanKind, parent: Context, startMs: number): TraceSpan {
    const remote = trace.getSpanContext(parent);
    const valid = remote !== undefined && isSpanContextValid(remote);
    const traceId = valid ? remote.traceId : this.ids.traceId();
    const result = this.sampler!.shouldSample(parent, traceId, name, kind, NO_ATTRIBUTES, NO_LINKS);
    const sampled = result.decision === SAMPLED;
    const traceState = result.traceState ?? (valid ? remote.traceState : undefined);
    return new TraceSpan({
      traceId,
      spanId: this.ids.spanId(),
      traceFlags: sampled ? 1 : 0,
      traceState: traceState?.serialize(),
      parentSpanId: valid ? remote.spanId : undefined,
      parentIsRemote: valid ? remote.isRemote : undefined,
      name,
      kind,
      startMs,
      sink: sampled ? this.batcher : undefined,
      limits: this.limits,
    });
  }

  /**
   * A child of a local span. It takes its parent's sampling decision: what every standard sampler
   * decides for it (parent-based ones follow a local parent, the ratio one is a function of the
   * trace id, always_on/off are constant).
   */
  child(name: string, kind: SpanKind, parent: TraceSpan, startMs: number): TraceSpan {
    return new TraceSpan({
      traceId: parent.traceId,
      spanId: this.ids.spanId(),
      traceFlags: parent.traceFlags,
      traceState: parent.traceState,
      parentSpanId: parent.spanId,
      parentIsRemote: false,
      name,
      kind,
      startMs,
      sink: parent.sampled ? this.batcher : undefined,
      limits: this.limits,
    });
  }

  /** Writes `span`'s `traceparent` (and `tracestate`) into `headers`, replacing the client's (W3C Trace Context, version 00). */
  inject(span: TraceSpan, headers: Record<string, string>): void {
    headers.traceparent = `00-${span.traceId}-${span.spanId}-0${span.traceFlags}`;
    if (span.traceState) headers.tracestate = span.traceState;
  }

  /** Exports what is still batched (shutdown: the drained requests' spans go out too). */
  async onApplicationShutdown(): Promise<void> {
    await this.batcher?.shutdown().catch((e: unknown) => this.log.warn(`span export at shutdown failed: ${String(e)}`));
  }
}

/** `service.name` (OTEL_SERVICE_NAME, default switchboard), `service.instance.id` and OTEL_RESOURCE_ATTRIBUTES: key, value, key, value… */
function resourceAttributes(instanceId: string): AttrValue[] {
  const fromEnv = detectResources({ detectors: [envDetector] });
  const resource = resourceFromAttributes({ 'service.name': SERVICE_NAME, 'service.instance.id': instanceId }).merge(fromEnv);
  const out: AttrValue[] = [];
  for (const [key, value] of Object.entries(resource.attributes)) {
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') out.push(key, value);
  }
  return out;
}

/** A URL as it may be logged: without any user name or password. */
function withoutCredentials(url: string): string {
  try {
    const u = new URL(url);
    u.username = '';
    u.password = '';
    return u.toString();
  } catch {
    return '(unparseable URL)';
  }
}
