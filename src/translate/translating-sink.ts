import { GatewayError, statusOf } from '../common/gateway-error';
import type { ResponseSink } from '../dispatch/relay-request';
import type { AnswerContext, DialectCodec, Json, StreamTranslator } from './dialect-codec';
import { DelegatingSink } from './delegating-sink';

/** Names the dialect a response was translated from (issue 20's contract). */
export const TRANSLATED_HEADER = 'x-switchboard-translated';

/** A backend error body is read for its message only: more than this is not kept. */
const MAX_ERROR_TEXT = 64 * 1024;

/** The JSON content type of translated whole answers. */
const JSON_HEADERS = { 'content-type': 'application/json' };

/**
 * The client's sink seen through a codec: the worker's chat-completions answer goes in, the client's
 * dialect comes out. Everything about the client's connection (backpressure, progress, drain, abort,
 * gateway headers) is the client sink's own; only what is written changes.
 *
 * A stream starts at the client only when the translation has something to say, so a backend that
 * answered a streamed request with an error (status ≥ 400, or a JSON body instead of SSE) is
 * answered as one whole error in the client's dialect.
 */
export class TranslatingSink extends DelegatingSink {
  private stream: StreamTranslator | undefined;
  private clientStarted = false;
  /** The backend's status, when it is an error: its body is collected instead of streamed. */
  private errorStatus: number | undefined;
  private errorText = '';
  /** Backend text seen before the translation produced anything (an error body sent without `response_start`). */
  private unspoken = '';
  private backendHeaders: Record<string, string> | undefined;
  private failed = false;

  constructor(
    client: ResponseSink,
    private readonly codec: DialectCodec,
    private readonly ctx: AnswerContext,
    /** The `x-switchboard-translated` value, or undefined for translations that do not announce themselves. */
    private readonly announce: string | undefined,
  ) {
    super(client);
  }

  override startStream(status = 200, headers?: Record<string, string>): void {
    this.backendHeaders = headers;
    if (status >= 400) {
      this.errorStatus = status;
      return;
    }
    this.stream = this.codec.stream?.(this.ctx);
  }

  override writeChunk(chunk: string): boolean {
    if (this.errorStatus !== undefined || !this.stream) return this.collectError(chunk);
    const out = this.stream.push(chunk);
    if (out === '') {
      if (!this.clientStarted) this.unspoken = keep(this.unspoken, chunk);
      return true;
    }
    this.startClient();
    return this.client.writeChunk(out);
  }

  override endStream(status?: number): void {
    if (this.errorStatus !== undefined || !this.stream) return this.sendError(this.errorStatus ?? errorStatusOr(status), this.errorText);
    const tail = this.stream.end();
    if (!this.clientStarted && this.unspoken.trimStart().startsWith('{')) {
      // Not a stream at all: the backend answered with a JSON (error) body and no `response_start`; its
      // status comes with the completion (a 400 stays a 400: agents treat it unlike a 5xx).
      return this.sendError(errorStatusOr(status), this.unspoken);
    }
    this.startClient();
    if (tail !== '') this.client.writeChunk(tail);
    this.client.endStream();
  }

  override sendComplete(status: number, headers: Record<string, string>, body: string | readonly string[]): void {
    const text = typeof body === 'string' ? body : body.join('');
    if (status >= 400 || status < 200) return this.sendError(status, text, headers);
    const parsed = parseObject(text);
    if (!parsed) return this.sendError(502, text, headers);
    this.announceTo();
    this.client.sendComplete(status, { ...dropEntityHeaders(headers), ...JSON_HEADERS }, JSON.stringify(this.codec.fromChat(parsed, this.ctx)));
  }

  override fail(error: GatewayError): void {
    // A started translated stream ends with its own dialect's failure events (a Responses client reads
    // events by `type`, so the generic SSE error event would leave it waiting for a terminal event).
    const closing =
      this.clientStarted && !this.failed ? this.stream?.fail?.({ code: error.code, message: error.message, status: statusOf(error.code) }) : undefined;
    this.failed = true;
    if (closing === undefined || this.client.clientGone) return this.client.fail(error);
    if (closing !== '') this.client.writeChunk(closing);
    this.client.endStream();
  }

  private startClient(): void {
    if (this.clientStarted) return;
    this.clientStarted = true;
    this.announceTo();
    const headers = this.backendHeaders ? dropEntityHeaders(this.backendHeaders) : undefined;
    this.client.startStream(200, headers);
  }

  private collectError(chunk: string): boolean {
    this.errorText = keep(this.errorText, chunk);
    return true;
  }

  private sendError(status: number, text: string, headers?: Record<string, string>): void {
    this.announceTo();
    const backend = headers ?? this.backendHeaders;
    const out = JSON.stringify(this.codec.errorFromChat(status, text));
    this.client.sendComplete(status, { ...(backend ? dropEntityHeaders(backend) : {}), ...JSON_HEADERS }, out);
  }

  private announceTo(): void {
    if (this.announce !== undefined) this.client.addHeaders?.({ [TRANSLATED_HEADER]: this.announce });
  }
}

/** A backend error's status as reported, or 502 when it reported none (or a success for a body that is no stream). */
function errorStatusOr(status: number | undefined): number {
  return status !== undefined && status >= 400 && status <= 599 ? status : 502;
}

/** Appends up to the error-text bound. */
function keep(held: string, chunk: string): string {
  return held.length >= MAX_ERROR_TEXT ? held : held + chunk.slice(0, MAX_ERROR_TEXT - held.length);
}

function parseObject(text: string): Json | undefined {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : undefined;
  } catch {
    return undefined;
  }
}

/** The backend's headers that describe its own body, which the translated answer replaces. */
const ENTITY_HEADERS = new Set(['content-type', 'content-length', 'content-encoding', 'etag', 'content-md5', 'digest']);

function dropEntityHeaders(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of Object.keys(headers)) if (!ENTITY_HEADERS.has(name.toLowerCase())) out[name] = headers[name];
  return out;
}
