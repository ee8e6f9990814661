/**
 * The OTLP/HTTP JSON encoding (https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding)
 * of spans, written as text while a span is recorded instead of kept as objects until its batch
 * is serialized. A batch used to hold 512 SDK spans (attribute maps, event arrays, contexts) until
 * the export, where @opentelemetry/otlp-transformer copied each into OTLP objects and stringified
 * them: most of tracing's CPU was that garbage. Here an ended span is one string, and a batch is
 * those strings joined. The output is what JsonTraceSerializer makes of the same span
 * (otlp-json.spec.ts checks this against the transformer itself).
 */

/** An attribute value: what the gateway's spans carry (no arrays, no bytes). */
export type AttrValue = string | number | boolean;

/** `{"key":…,"value":` of each key seen: the keys are the gateway's few constants. */
const keyPrefixes = new Map<string, string>();

/** `{"key":…,"value":{…}}`: one KeyValue. */
export function keyValue(key: string, value: AttrValue): string {
  let prefix = keyPrefixes.get(key);
  if (prefix === undefined) {
    prefix = `{"key":${JSON.stringify(key)},"value":`;
    // Bounded: a caller passing keys made from data must not grow this without end.
    if (keyPrefixes.size < 256) keyPrefixes.set(key, prefix);
  }
  return `${prefix}${anyValue(value)}}`;
}

/** `list` and one more item: JSON array items, comma-separated. */
export function append(list: string, item: string): string {
  return list === '' ? item : `${list},${item}`;
}

function anyValue(value: AttrValue): string {
  switch (typeof value) {
    case 'string':
      return `{"stringValue":${JSON.stringify(value)}}`;
    case 'number':
      // JSON has no NaN or Infinity: the transformer's JSON.stringify writes them as null too.
      return Number.isInteger(value) ? `{"intValue":${value}}` : `{"doubleValue":${Number.isFinite(value) ? value : null}}`;
    case 'boolean':
      return `{"boolValue":${value}}`;
    default:
      // Not reachable through the types; a value off a worker's frame must not break a batch's JSON.
      return `{"stringValue":${JSON.stringify(String(value))}}`;
  }
}

/**
 * Unix epoch ms as the OTLP nanosecond string. Clock times are whole ms, so the common case is a
 * suffix; a fractional time is split as the SDK splits it (seconds, then nanoseconds rounded).
 */
export function nanos(ms: number): string {
  if (Number.isInteger(ms) && ms >= 0) return ms === 0 ? '0' : `${ms}000000`;
  const seconds = Math.trunc(ms / 1000);
  const ns = Math.round((ms - seconds * 1000) * 1e6);
  return (BigInt(seconds) * 1_000_000_000n + BigInt(ns)).toString();
}

/** The span flags field: W3C trace flags plus "parent is known to be local/remote" (proto SpanFlags). */
export function spanFlags(traceFlags: number, parentIsRemote: boolean | undefined): number {
  // SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK (0x100), SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK (0x200)
  return (traceFlags & 0xff) | 0x100 | (parentIsRemote ? 0x200 : 0);
}

/**
 * `{"resourceSpans":[{"resource":…,"scopeSpans":[{"scope":…,"spans":[`: everything of an export
 * request before its spans (one resource, one scope: the gateway's). `BODY_END` closes it.
 */
export function bodyStart(resource: Record<string, AttrValue>, scopeName: string): string {
  let attrs = '';
  for (const key of Object.keys(resource)) attrs = append(attrs, keyValue(key, resource[key]));
  return `{"resourceSpans":[{"resource":{"attributes":[${attrs}],"droppedAttributesCount":0},"scopeSpans":[{"scope":{"name":${JSON.stringify(scopeName)}},"spans":[`;
}

export const BODY_END = ']}]}]}';
