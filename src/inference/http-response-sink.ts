import { ServerResponse, validateHeaderName, validateHeaderValue } from 'node:http';
import type { Socket } from 'node:net';
import { GatewayError, statusOf } from '../common/gateway-error';
import { ResponseSink } from '../dispatch/relay-request';
import { clientResponseHeaders } from './response-headers';
import { CACHE_HIT_HEADER, CACHE_TOKENS_REUSED_HEADER, readCacheHeaders } from '../usage/cache-headers';
import { CORRELATION_HEADER } from '../observability/correlation-id';
import { Dialect, errorBody, errorHeaders, sseErrorEvent } from '../common/error-dialect';

const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
};

/**
 * Writes a relayed response onto a raw Node response (the Fastify reply is hijacked, so SSE
 * chunks go out as written, byte-for-byte, with the socket's own backpressure).
 */
/** Response headers naming the model that served the request (and the one asked for, on fallback). */
const SERVED_MODEL_HEADER = 'x-switchboard-model';
const FALLBACK_HEADER = 'x-switchboard-fallback';
/** Milliseconds the request waited in the gateway's queue (0 when a worker took it at once). */
const QUEUE_WAIT_HEADER = 'x-queue-wait-ms';
/** The serving worker's name, when `routing.expose_worker_header` is on. */
const WORKER_HEADER = 'x-switchboard-worker';
/** The backend's processing time (model-runner API); only on whole answers, a stream's headers go out first. */
const GPU_TIME_HEADER = 'x-gpu-time-ms';

/**
 * The model-runner API's cache response headers, on every relayed answer: the backend's own
 * `x-cache-hit` / `x-cache-tokens-reused` normalised to `true`/`false` and a whole number, and
 * `false`/`0` when it said nothing.
 */
function cacheHeaders(out: Record<string, string>, backend: Record<string, string> | undefined): void {
  // Names are lowercased by clientResponseHeaders: two lookups, no scan of the headers.
  const hit = backend?.[CACHE_HIT_HEADER];
  const reused = backend?.[CACHE_TOKENS_REUSED_HEADER];
  const report =
    hit === undefined && reused === undefined ? {} : readCacheHeaders({ [CACHE_HIT_HEADER]: hit ?? '', [CACHE_TOKENS_REUSED_HEADER]: reused ?? '' });
  out[CACHE_HIT_HEADER] = report.hit === true ? 'true' : 'false';
  out[CACHE_TOKENS_REUSED_HEADER] = String(report.tokensReused ?? 0);
}

export class HttpResponseSink implements ResponseSink {
  clientGone = false;
  private ended = false;
  /**
   * Gateway headers every response carries: served model, queue wait, rate-limit state. (A plain
   * literal: a computed name, even a constant one, makes V8 build the object on its slow path. The
   * name must stay QUEUE_WAIT_HEADER's, or a response would carry the header twice.)
   */
  private readonly gatewayHeaders: Record<string, string> = { 'x-queue-wait-ms': '0' };

  constructor(
    private readonly res: ServerResponse,
    private readonly correlationId: string,
    private readonly dialect: Dialect,
  ) {}

  /**
   * Calls `onGone` once if the client disconnects before the response is complete. Returns false
   * when the client has already gone (its socket closed before the handler ran).
   */
  watchClient(onGone: () => void): boolean {
    // A request pipelined behind another gets its response's socket only once the earlier
    // responses on the connection are finished; until then the request's socket is the one to watch.
    const socket = this.res.socket ?? this.res.req?.socket;
    if (!socket || socket.destroyed) {
      this.clientGone = true;
      return false;
    }
    const gone = () => {
      if (this.ended || this.clientGone) return;
      this.clientGone = true;
      onGone();
    };
    this.res.on('close', gone);
    if (!this.res.socket) {
      // A response still waiting for its socket gets no 'close' when the connection drops.
      const stop = onSocketClose(socket, gone);
      this.res.once('socket', stop);
    }
    return true;
  }

  /** `routing.expose_worker_header`: each assignment also names its worker (read from `workerName`). */
  nameWorker(workerName: () => string | undefined): void {
    this.workerName = workerName;
  }

  private workerName: (() => string | undefined) | undefined;

  routed(servedModel: string, fallbackFor: string | undefined): void {
    // Model names are client or worker text: only values HTTP can carry are sent (set one by one,
    // in this order, without a copy per request; an unsendable one leaves the earlier value).
    const out = this.gatewayHeaders;
    if (sendable(SERVED_MODEL_HEADER, servedModel)) out[SERVED_MODEL_HEADER] = servedModel;
    if (fallbackFor !== undefined && sendable(FALLBACK_HEADER, fallbackFor)) out[FALLBACK_HEADER] = fallbackFor;
    const worker = this.workerName?.();
    if (worker !== undefined && sendable(WORKER_HEADER, worker)) out[WORKER_HEADER] = worker;
  }

  queueWaited(ms: number): void {
    this.gatewayHeaders[QUEUE_WAIT_HEADER] = String(ms);
  }

  gpuTime(ms: number): void {
    this.gatewayHeaders[GPU_TIME_HEADER] = String(Math.max(0, Math.round(ms)));
  }

  /** Adds gateway headers (e.g. `x-ratelimit-*`) to whatever response is written. */
  addHeaders(headers: Record<string, string>): void {
    Object.assign(this.gatewayHeaders, headers);
  }

  startStream(status = 200, headers?: Record<string, string>): void {
    const backend = headers ? clientResponseHeaders(headers, sendable) : undefined;
    if (backend) delete backend['content-length']; // the stream is written as it arrives
    // Same names, order and precedence as spreading the four sources, without object spread's slow path.
    const out: Record<string, string> = Object.assign({}, SSE_HEADERS, backend);
    cacheHeaders(out, backend);
    Object.assign(out, this.gatewayHeaders);
    out[CORRELATION_HEADER] = this.correlationId;
    this.res.writeHead(status, out);
  }

  writeChunk(chunk: string): boolean {
    return this.res.write(chunk);
  }

  get pendingBytes(): number {
    return this.res.writableLength;
  }

  get progress(): number {
    // Changes whenever the kernel takes bytes from the connection, i.e. only when the client reads.
    // Node counts a write done only once all of it is out, and a whole answer goes as one big
    // write, so the unsent part of the write in flight (libuv's writeQueueSize) is taken in too.
    // A response queued behind another watches the connection it will be sent on.
    const socket = this.res.socket ?? this.res.req?.socket;
    if (!socket) return 0;
    const inFlight = (socket as unknown as { _handle?: { writeQueueSize?: unknown } })._handle?.writeQueueSize;
    return (socket.bytesWritten ?? 0) - socket.writableLength - (typeof inFlight === 'number' ? inFlight : 0);
  }

  onDrain(listener: () => void): void {
    // A whole answer ends with 'finish' rather than 'drain'; a client that leaves, with 'close'.
    // A response queued behind another on its connection has no socket yet and hears none of
    // these when the connection drops: its connection's close is watched as well.
    let done = false;
    const socket = this.res.socket ? undefined : this.res.req?.socket;
    const stopSocket = socket ? onSocketClose(socket, () => once()) : undefined;
    const once = () => {
      if (done) return;
      done = true;
      this.res.off('drain', once);
      this.res.off('finish', once);
      this.res.off('close', once);
      stopSocket?.();
      listener();
    };
    this.res.on('drain', once);
    this.res.on('finish', once);
    this.res.on('close', once);
    if (socket?.destroyed) once();
  }

  abort(): void {
    this.ended = true;
    // Without a socket of its own, destroy() would wait for one that never comes (the response
    // ahead of it may run for minutes): the connection itself is cut.
    if (!this.res.socket) this.res.req?.socket?.destroy();
    this.res.destroy();
  }

  endStream(): void {
    this.ended = true;
    this.res.end();
  }

  sendComplete(status: number, headers: Record<string, string>, body: string | readonly string[]): void {
    this.ended = true;
    const safe = clientResponseHeaders(headers, sendable);
    // 204 and 304 responses carry no body; Node would drop it but keep a wrong content-length.
    const bodiless = status === 204 || status === 304;
    if (!bodiless) {
      const length = byteLengthOf(body);
      safe['content-length'] = String(length);
      if (length > 0 && !safe['content-type']) safe['content-type'] = 'application/json';
    }
    cacheHeaders(safe, safe);
    Object.assign(safe, this.gatewayHeaders);
    safe[CORRELATION_HEADER] = this.correlationId;
    this.res.writeHead(status, safe);
    if (bodiless || typeof body === 'string') return void this.res.end(bodiless ? undefined : body);
    // Collected chunks go out one by one (corked into few socket writes), never joined into a copy.
    this.res.cork();
    for (const chunk of body) this.res.write(chunk);
    this.res.end();
    this.res.uncork();
  }

  fail(error: GatewayError): void {
    if (this.ended) return;
    this.ended = true;
    if (this.res.headersSent) {
      this.res.end(sseErrorEvent(this.dialect, error));
      return;
    }
    const body = JSON.stringify(errorBody(this.dialect, error));
    const headers: Record<string, string> = Object.assign(
      { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) },
      this.gatewayHeaders,
    );
    // The model-runner API's cache headers are on every answer: an error is no cache hit.
    cacheHeaders(headers, undefined);
    headers[CORRELATION_HEADER] = this.correlationId;
    this.res.writeHead(statusOf(error.code), Object.assign(headers, errorHeaders(error)));
    this.res.end(body);
  }
}

function byteLengthOf(body: string | readonly string[]): number {
  if (typeof body === 'string') return Buffer.byteLength(body);
  let n = 0;
  for (const chunk of body) n += Buffer.byteLength(chunk);
  return n;
}

/** Close callbacks of responses queued behind others, one socket listener per connection. */
const queuedOnSocket = new WeakMap<Socket, Set<() => void>>();

/** Runs `fn` when the socket closes; the returned function unsubscribes. */
function onSocketClose(socket: Socket, fn: () => void): () => void {
  let callbacks = queuedOnSocket.get(socket);
  if (!callbacks) {
    const set = new Set<() => void>();
    callbacks = set;
    queuedOnSocket.set(socket, set);
    socket.once('close', () => {
      queuedOnSocket.delete(socket);
      for (const cb of set) cb();
    });
  }
  callbacks.add(fn);
  return () => callbacks.delete(fn);
}

/** The patterns of Node's `validateHeaderName` and `validateHeaderValue` (lib/_http_common.js). */
const HEADER_TOKEN = /^[\^_`a-zA-Z\-0-9!#$%&'*+.|~]+$/;
const INVALID_HEADER_VALUE = /[^\t\x20-\x7e\x80-\xff]/;

/**
 * Whether Node would send this header (a name and value `writeHead` does not throw for: control or
 * non-Latin-1 characters would make it throw). A worker's headers are first narrowed by
 * `clientResponseHeaders` (response-headers.ts: no hop-by-hop, cookie, CORS or security headers,
 * backend rate limits renamed).
 */
function sendable(name: string, value: string): boolean {
  // Node's own tests (a token name; a defined value without control characters), without the
  // cost of a throw-and-catch per header; anything they do not pass gets Node's checks below.
  if (HEADER_TOKEN.test(name) && typeof value === 'string' && !INVALID_HEADER_VALUE.test(value)) return true;
  try {
    validateHeaderName(name);
    validateHeaderValue(name, value);
    return true;
  } catch {
    return false; // not representable in HTTP/1.1
  }
}
