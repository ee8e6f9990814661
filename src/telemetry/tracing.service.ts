import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { Context, ROOT_CONTEXT, Span, SpanKind, TimeInput, trace, Tracer } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { APP_CONFIG, AppConfig } from '../config';
import { OtlpHttpJsonExporter, otlpOptionsFromEnv } from './otlp-http-exporter';

const SERVICE_NAME = 'switchboard';
const propagator = new W3CTraceContextPropagator();

const headerGetter = {
  get: (carrier: Record<string, string>, key: string) => carrier[key],
  keys: (carrier: Record<string, string>) => Object.keys(carrier),
};
const headerSetter = {
  set: (carrier: Record<string, string>, key: string, value: string) => {
    carrier[key] = value;
  },
};

/**
 * OpenTelemetry traces, exported over OTLP/HTTP when `OTEL_EXPORTER_OTLP_ENDPOINT` (or
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set. Off, `enabled` is false and nothing else is made:
 * the request observer that makes spans is not even registered (no cost on the hot path).
 *
 * The provider is this module's own (not registered as the global one): the gateway's spans are
 * made explicitly by its request observer, never by monkey-patching instrumentations. The SDK reads
 * the standard variables itself (`OTEL_TRACES_SAMPLER(_ARG)`, `OTEL_BSP_*`, `OTEL_RESOURCE_ATTRIBUTES`);
 * the exporter reads `OTEL_EXPORTER_OTLP_(TRACES_)HEADERS` and `_TIMEOUT`.
 */
@Injectable()
export class Tracing implements OnApplicationShutdown {
  private readonly provider: BasicTracerProvider | undefined;
  private readonly tracer: Tracer | undefined;
  readonly captureContent: boolean;
  private readonly log = new Logger('Tracing');

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.captureContent = config.telemetry.captureContent;
    const url = config.telemetry.tracesEndpoint;
    if (!url) return;
    this.provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ 'service.name': process.env.OTEL_SERVICE_NAME || SERVICE_NAME, 'service.instance.id': config.instanceId }),
      spanProcessors: [new BatchSpanProcessor(new OtlpHttpJsonExporter(otlpOptionsFromEnv(url)))],
    });
    this.tracer = this.provider.getTracer(SERVICE_NAME);
    this.log.log(`tracing to ${url}`);
  }

  get enabled(): boolean {
    return this.tracer !== undefined;
  }

  /** The context an incoming `traceparent` (and `tracestate`) names; the root context without one. */
  parentOf(headers: Record<string, string> | undefined): Context {
    return headers?.traceparent ? propagator.extract(ROOT_CONTEXT, headers, headerGetter) : ROOT_CONTEXT;
  }

  /** A span; `parent` is a context or a span (its child). Only called while enabled. */
  start(name: string, kind: SpanKind, parent: Context | Span, startTime: TimeInput, attributes?: Record<string, string | number | boolean>): Span {
    const context = isSpan(parent) ? trace.setSpan(ROOT_CONTEXT, parent) : parent;
    return this.tracer!.startSpan(name, { kind, startTime, attributes }, context);
  }

  /** Writes `span`'s `traceparent` (and `tracestate`) into `headers`, replacing the client's. */
  inject(span: Span, headers: Record<string, string>): void {
    propagator.inject(trace.setSpan(ROOT_CONTEXT, span), headers, headerSetter);
  }

  /** Exports what is still batched (shutdown: the drained requests' spans go out too). */
  async onApplicationShutdown(): Promise<void> {
    await this.provider?.shutdown().catch((e: unknown) => this.log.warn(`span export at shutdown failed: ${String(e)}`));
  }
}

function isSpan(x: Context | Span): x is Span {
  return typeof (x as Span).spanContext === 'function';
}
