import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { AttrValue, nanos, OtlpWriter, spanFlags } from './otlp-json';

/** A span the batcher can write into an export body. */
export interface EndedSpan {
  writeJson(w: OtlpWriter): void;
}

/** Where an ended span goes (the batcher). */
export interface SpanSink {
  ended(span: EndedSpan): void;
}

/** What a span is made with, by Tracing. */
export interface SpanInit {
  traceId: string;
  spanId: string;
  /** W3C trace flags: 1 sampled, 0 not. */
  traceFlags: number;
  /** The `tracestate` header's value, passed on unchanged. */
  traceState: string | undefined;
  parentSpanId: string | undefined;
  parentIsRemote: boolean | undefined;
  name: string;
  kind: SpanKind;
  startMs: number;
  /** Undefined for an unsampled span: it only carries its context (for `traceparent`). */
  sink: SpanSink | undefined;
  limits: SpanLimits;
}

/** The standard span limits the SDK applied (`OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT`, `OTEL_SPAN_EVENT_COUNT_LIMIT`). */
export interface SpanLimits {
  valueLength: number;
  events: number;
}

/** An event: its name, time and attributes (key, value, key, value…). */
type SpanEvent = [name: string, timeMs: number, attributes: (string | AttrValue)[] | undefined];

/**
 * One span: its attributes and events kept as they are given (references to strings the request
 * holds anyway), and written as OTLP JSON straight into the export body when it ends (otlp-json.ts).
 * Not the OpenTelemetry API's Span (that one costs a context, a limits check per attribute, a
 * Date.now and a performance.now per span, and its retention until its batch is exported): the
 * gateway's observer is its only user, and sets each attribute once. Unsampled, every call but the
 * context is a no-op.
 */
export class TraceSpan implements EndedSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly traceFlags: number;
  readonly traceState: string | undefined;
  private readonly parentSpanId: string | undefined;
  private readonly parentIsRemote: boolean | undefined;
  private readonly name: string;
  private readonly kind: SpanKind;
  private readonly startMs: number;
  private readonly limits: SpanLimits;
  private sink: SpanSink | undefined;
  private endMs = 0;
  /** key, value, key, value… */
  private readonly attributes: (string | AttrValue)[] = [];
  private events: SpanEvent[] | undefined;
  private droppedEvents = 0;
  private errorMessage: string | undefined;

  // The fields are copied rather than the init kept: a span lives as long as its request.
  constructor(init: SpanInit) {
    this.parentSpanId = init.parentSpanId;
    this.parentIsRemote = init.parentIsRemote;
    this.name = init.name;
    this.kind = init.kind;
    this.startMs = init.startMs;
    this.limits = init.limits;
    this.traceId = init.traceId;
    this.spanId = init.spanId;
    this.traceFlags = init.traceFlags;
    this.traceState = init.traceState;
    this.sink = init.sink;
  }

  /** Sampled and not ended yet: attributes and events are kept. */
  get recording(): boolean {
    return this.sink !== undefined;
  }

  get sampled(): boolean {
    return (this.traceFlags & 1) === 1;
  }

  /** Sets an attribute; each key once per span (unlike the API's Span, a second set adds a duplicate). */
  set(key: string, value: AttrValue | undefined): this {
    if (this.sink && value !== undefined) this.attributes.push(key, this.limited(value));
    return this;
  }

  /** An event at `timeMs`, with attributes as key, value, key, value… */
  event(name: string, timeMs: number, attributes?: (string | AttrValue)[]): this {
    if (!this.sink) return this;
    const events = (this.events ??= []);
    if (events.length >= this.limits.events) this.droppedEvents += 1;
    else events.push([name, timeMs, attributes]);
    return this;
  }

  /** Status error, with a description. */
  error(message: string): this {
    if (this.sink) this.errorMessage = message;
    return this;
  }

  /** Ends the span at `endMs` and queues it for export; later calls do nothing. */
  end(endMs: number): void {
    const sink = this.sink;
    if (!sink) return;
    this.sink = undefined;
    this.endMs = endMs;
    sink.ended(this);
  }

  /** The span as an OTLP JSON Span object (the batcher calls this once it has ended). */
  writeJson(w: OtlpWriter): void {
    w.raw('{"traceId":"').raw(this.traceId).raw('","spanId":"').raw(this.spanId).raw('",');
    if (this.parentSpanId !== undefined) w.raw('"parentSpanId":"').raw(this.parentSpanId).raw('",');
    if (this.traceState !== undefined) w.raw('"traceState":').str(this.traceState).raw(',');
    w.raw('"name":')
      .str(this.name)
      .raw(`,"kind":${this.kind + 1},"startTimeUnixNano":"`)
      .raw(nanos(this.startMs));
    w.raw('","endTimeUnixNano":"').raw(nanos(this.endMs)).raw('","attributes":').keyValues(this.attributes);
    w.raw(',"droppedAttributesCount":0,"events":[');
    const events = this.events ?? [];
    for (let i = 0; i < events.length; i++) {
      const [name, timeMs, attributes] = events[i];
      w.raw(i > 0 ? ',{"attributes":' : '{"attributes":').keyValues(attributes ?? []);
      w.raw(',"name":').str(name).raw(',"timeUnixNano":"').raw(nanos(timeMs)).raw('","droppedAttributesCount":0}');
    }
    w.raw(`],"droppedEventsCount":${this.droppedEvents},"status":`);
    if (this.errorMessage === undefined) w.raw(`{"code":${SpanStatusCode.UNSET}}`);
    else w.raw(`{"code":${SpanStatusCode.ERROR},"message":`).str(this.errorMessage).raw('}');
    w.raw(`,"links":[],"droppedLinksCount":0,"flags":${spanFlags(this.traceFlags, this.parentIsRemote)}}`);
  }

  private limited(value: AttrValue): AttrValue {
    return typeof value === 'string' && value.length > this.limits.valueLength ? value.slice(0, this.limits.valueLength) : value;
  }
}
