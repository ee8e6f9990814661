import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { append, AttrValue, keyValue, nanos, spanFlags } from './otlp-json';

/** Where an ended span's OTLP JSON goes (the batcher). */
export interface SpanSink {
  ended(encoded: string): void;
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

/**
 * One span, recorded straight into its OTLP JSON text (otlp-json.ts): attributes and events are
 * appended as they come, and its end hands one string to the batcher. Not the OpenTelemetry API's
 * Span (that one costs a context, a limits check per attribute, a Date.now and a performance.now
 * per span, and its batch-long retention): the gateway's observer is its only user, and sets each
 * attribute once. Unsampled, every call but the context is a no-op.
 */
export class TraceSpan {
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
  private attributes = '';
  private events = '';
  private eventCount = 0;
  private droppedEvents = 0;
  private status = `{"code":${SpanStatusCode.UNSET}}`;

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
    if (this.sink && value !== undefined) this.attributes = append(this.attributes, keyValue(key, this.limited(value)));
    return this;
  }

  /**
   * An event's attribute, for `event`: `span.event('x', t, span.attr(k1, v1) + ',' + span.attr(k2, v2))`.
   * Encoded by the caller, not passed as an object: an object literal with computed keys (the
   * attribute names are constants) is built key by key at run time.
   */
  attr(key: string, value: AttrValue): string {
    return keyValue(key, this.limited(value));
  }

  /** An event at `timeMs`, with attributes made by `attr` (comma-separated). */
  event(name: string, timeMs: number, attributes = ''): this {
    if (!this.sink) return this;
    if (this.eventCount >= this.limits.events) {
      this.droppedEvents += 1;
      return this;
    }
    this.events = append(
      this.events,
      `{"attributes":[${attributes}],"name":${JSON.stringify(name)},"timeUnixNano":"${nanos(timeMs)}","droppedAttributesCount":0}`,
    );
    this.eventCount += 1;
    return this;
  }

  /** Status error, with a description. */
  error(message: string): this {
    if (this.sink) this.status = `{"code":${SpanStatusCode.ERROR},"message":${JSON.stringify(message)}}`;
    return this;
  }

  /** Ends the span at `endMs` and queues it for export; later calls do nothing. */
  end(endMs: number): void {
    const sink = this.sink;
    if (!sink) return;
    this.sink = undefined;
    const parent = this.parentSpanId === undefined ? '' : `"parentSpanId":"${this.parentSpanId}",`;
    const state = this.traceState === undefined ? '' : `"traceState":${JSON.stringify(this.traceState)},`;
    sink.ended(
      `{"traceId":"${this.traceId}","spanId":"${this.spanId}",${parent}${state}"name":${JSON.stringify(this.name)},"kind":${this.kind + 1},` +
        `"startTimeUnixNano":"${nanos(this.startMs)}","endTimeUnixNano":"${nanos(endMs)}","attributes":[${this.attributes}],"droppedAttributesCount":0,` +
        `"events":[${this.events}],"droppedEventsCount":${this.droppedEvents},"status":${this.status},"links":[],"droppedLinksCount":0,` +
        `"flags":${spanFlags(this.traceFlags, this.parentIsRemote)}}`,
    );
  }

  private limited(value: AttrValue): AttrValue {
    return typeof value === 'string' && value.length > this.limits.valueLength ? value.slice(0, this.limits.valueLength) : value;
  }
}
