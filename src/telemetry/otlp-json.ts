/**
 * The OTLP/HTTP JSON encoding (https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding)
 * of spans, written byte by byte into an export request's body when a span ends. A batch used to
 * hold 512 SDK spans (attribute maps, event arrays, contexts) until the export, where
 * @opentelemetry/otlp-transformer copied each into OTLP objects and stringified them; then one
 * string per span (its pieces concatenated, then flattened into the body): both were garbage the
 * gateway's collector had to go through, at the rate of the requests. Here the pieces go straight
 * into a reused buffer and only a string value that needs JSON escaping makes a new string. The
 * output is what JsonTraceSerializer makes of the same span (otlp-json.spec.ts checks this against
 * the transformer itself).
 */

/** An attribute value: what the gateway's spans carry (no arrays, no bytes). */
export type AttrValue = string | number | boolean;

/** Printable ASCII without `"` and `\`: a JSON string as is, one byte per character. */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;
/** Up to this length, text is copied into the buffer in JS rather than by Buffer.write. */
const SHORT = 64;

/** An export request's body under construction: UTF-8 bytes outside the JS heap, in a buffer that grows. */
export class OtlpWriter {
  private len = 0;

  constructor(private buf: Buffer) {}

  get length(): number {
    return this.len;
  }

  /** Text known to be ASCII needing no escaping (the encoding's own punctuation and names). */
  raw(text: string): this {
    const n = text.length;
    this.room(n);
    if (n > SHORT) {
      this.len += this.buf.write(text, this.len, 'latin1');
      return this;
    }
    // Short pieces are copied here: a write() per piece (a call into C++ each) cost more than the copy.
    const buf = this.buf;
    let at = this.len;
    for (let i = 0; i < n; i++) buf[at++] = text.charCodeAt(i);
    this.len = at;
    return this;
  }

  /** A JSON string literal. */
  str(value: string): this {
    const n = value.length;
    if (n <= SHORT) {
      // Copied while it is plain ASCII (most values: names, ids, paths); escaped otherwise.
      this.room(n + 2);
      const buf = this.buf;
      let at = this.len;
      buf[at++] = 0x22; // "
      let i = 0;
      for (; i < n; i++) {
        const c = value.charCodeAt(i);
        if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) break;
        buf[at++] = c;
      }
      if (i === n) {
        buf[at++] = 0x22;
        this.len = at;
        return this;
      }
    } else if (PLAIN.test(value)) {
      this.room(n + 2);
      this.buf[this.len++] = 0x22;
      this.len += this.buf.write(value, this.len, 'latin1');
      this.buf[this.len++] = 0x22;
      return this;
    }
    const json = JSON.stringify(value);
    // A UTF-16 unit is at most 3 UTF-8 bytes: with that room, write() never stops short.
    this.room(json.length * 3);
    this.len += this.buf.write(json, this.len, 'utf8');
    return this;
  }

  /** `{"key":…,"value":{…}}`: one KeyValue. */
  keyValue(key: string, value: AttrValue): this {
    this.raw('{"key":').str(key).raw(',"value":{');
    switch (typeof value) {
      case 'string':
        return this.raw('"stringValue":').str(value).raw('}}');
      case 'number':
        // JSON has no NaN or Infinity: the transformer's JSON.stringify writes them as null too.
        // OTLP's intValue is a 64-bit integer: a larger whole number (a client's `max_tokens: 1e300`)
        // written there would make the collector refuse the whole batch, so it goes as a double.
        if (Number.isSafeInteger(value)) return this.raw('"intValue":').raw(String(value)).raw('}}');
        return this.raw('"doubleValue":')
          .raw(Number.isFinite(value) ? String(value) : 'null')
          .raw('}}');
      case 'boolean':
        return this.raw(value ? '"boolValue":true}}' : '"boolValue":false}}');
      default:
        // Not reachable through the types; a value off a worker's frame must not break a batch's JSON.
        return this.raw('"stringValue":').str(String(value)).raw('}}');
    }
  }

  /** `[KeyValue,…]` of a flat key, value, key, value… list. */
  keyValues(list: readonly (string | AttrValue)[]): this {
    this.raw('[');
    for (let i = 0; i < list.length; i += 2) {
      if (i > 0) this.raw(',');
      this.keyValue(list[i] as string, list[i + 1]);
    }
    return this.raw(']');
  }

  /** The bytes written so far, and the buffer (the writer's until the body is sent). */
  finish(): { body: Buffer; buffer: Buffer } {
    return { body: this.buf.subarray(0, this.len), buffer: this.buf };
  }

  private room(bytes: number): void {
    if (this.len + bytes <= this.buf.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(this.len + bytes, this.buf.length * 2));
    this.buf.copy(bigger, 0, 0, this.len);
    this.buf = bigger;
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

/** Everything of an export request before its spans (one resource, one scope: the gateway's). `BODY_END` closes it. */
export function writeBodyStart(w: OtlpWriter, resource: readonly (string | AttrValue)[], scopeName: string): void {
  w.raw('{"resourceSpans":[{"resource":{"attributes":')
    .keyValues(resource)
    .raw(',"droppedAttributesCount":0},"scopeSpans":[{"scope":{"name":')
    .str(scopeName)
    .raw('},"spans":[');
}

export const BODY_END = ']}]}]}';
