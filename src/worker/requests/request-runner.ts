import { StringDecoder } from 'node:string_decoder';
import { RequestMessage, TokenCounts } from '../../protocol';
import { BackendClient, BackendResponse, BackendUnavailableError } from './backend-client';
import { JsonUsageScanner, SseUsageTracker, usageFromJsonBody } from './sse-usage';

/**
 * Largest non-streaming body sent inline in one `response_complete`, and the largest piece (in
 * UTF-8 bytes) of a bigger one. A WebSocket peer refuses frames above its max payload (ws and the
 * Switchboard gateway: 100 MiB) by closing the link with 1009, which loses every other request on
 * it. So a bigger body goes as `response_chunk` frames of at most this size, then a bodiless
 * `response_complete`, which the gateway reassembles for a non-streaming request; small bodies
 * keep the single-frame form that every gateway understands. 1 MiB is far below any sensible cap
 * and keeps the frames the worker buffers small.
 */
export const MAX_INLINE_BODY_BYTES = 1 << 20;

export const ErrorCodes = {
  BACKEND_UNAVAILABLE: 'backend_unavailable',
  BACKEND_STREAM_FAILED: 'backend_stream_failed',
  BACKEND_RESPONSE_FAILED: 'backend_response_failed',
  WORKER_SHUTTING_DOWN: 'worker_shutting_down',
  DUPLICATE_REQUEST_ID: 'duplicate_request_id',
  /** The gateway named a path that is not an inference endpoint this worker advertised (never sent to the backend). */
  ENDPOINT_NOT_ALLOWED: 'endpoint_not_allowed',
} as const;

export interface CompleteParts {
  status_code: number;
  headers?: Record<string, string>;
  body?: string;
  token_counts?: TokenCounts;
}

/** Where one request's answer goes. The daemon turns these into wire frames. */
export interface ResponseSink {
  /** A successful stream begins: the backend's status and headers, before the first chunk. */
  start?(status: number, headers: Record<string, string> | undefined): void;
  /** May return a promise to apply backpressure (the runner waits before reading more). */
  chunk(text: string): void | Promise<void>;
  complete(parts: CompleteParts): void;
  fail(code: string, message: string): void;
}

/**
 * Relays one request to the backend and reports the outcome to the sink exactly once
 * (complete or fail), unless `signal` is aborted: then it reports nothing, because whoever
 * aborted (cancel, shutdown deadline, lost connection) answers for the request.
 */
export async function runBackendRequest(backend: BackendClient, request: RequestMessage, signal: AbortSignal, sink: ResponseSink): Promise<void> {
  let headReceived = false;
  try {
    const res = await backend.post(request.endpoint_path, request.body, request.headers, signal);
    headReceived = true;
    const ok = res.status >= 200 && res.status <= 299;

    if (!request.is_streaming) {
      await relayWholeBody(res, ok, signal, sink);
      return;
    }
    if (!ok) {
      // Non-2xx answers to streaming requests come back whole so the gateway can relay the real
      // status (a chunk would start a 200 stream). They are small error documents.
      const chunks: Buffer[] = [];
      for await (const c of res.body) chunks.push(c as Buffer);
      sink.complete({ status_code: res.status, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') });
      return;
    }

    sink.start?.(res.status, res.headers);
    const decoder = new StringDecoder('utf8');
    const usage = new SseUsageTracker();
    for await (const buf of res.body) {
      const text = decoder.write(buf as Buffer);
      if (!text) continue; // the read ended inside a multi-byte character: wait for the rest
      usage.push(text);
      await sink.chunk(text);
      if (signal.aborted) return;
    }
    const tail = decoder.end();
    if (tail) {
      usage.push(tail);
      await sink.chunk(tail);
    }
    sink.complete({ status_code: res.status, headers: res.headers, token_counts: usage.finish() });
  } catch (err) {
    if (signal.aborted) return;
    const message = err instanceof Error ? err.message : String(err);
    if (!headReceived || err instanceof BackendUnavailableError) {
      sink.fail(ErrorCodes.BACKEND_UNAVAILABLE, message);
    } else if (request.is_streaming) {
      sink.fail(ErrorCodes.BACKEND_STREAM_FAILED, `backend stream broke: ${message}`);
    } else {
      sink.fail(ErrorCodes.BACKEND_RESPONSE_FAILED, `backend response broke: ${message}`);
    }
  }
}

/**
 * A non-streaming answer: inline in `response_complete` up to MAX_INLINE_BODY_BYTES, otherwise as
 * `response_chunk`s cut on UTF-8 character boundaries while the body is still arriving (so it is
 * never held whole, let alone twice), then a `response_complete` without `body`. (Bytes that
 * are not UTF-8 become U+FFFD as in the inline form, so only then can a piece's text grow past
 * the limit; JSON escaping in the frame adds a little too. Both stay far below any frame cap.)
 */
async function relayWholeBody(res: BackendResponse, ok: boolean, signal: AbortSignal, sink: ResponseSink): Promise<void> {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let chunked = false;
  const decoder = new StringDecoder('utf8');
  const usage = ok ? new JsonUsageScanner() : undefined;
  const emit = async (text: string): Promise<void> => {
    if (!text) return;
    usage?.push(text);
    await sink.chunk(text);
  };

  for await (const c of res.body) {
    pending.push(c as Buffer);
    pendingBytes += (c as Buffer).length;
    while (pendingBytes > MAX_INLINE_BODY_BYTES) {
      chunked = true;
      const buf = pending.length === 1 ? pending[0] : Buffer.concat(pending);
      const cut = utf8Cut(buf, MAX_INLINE_BODY_BYTES);
      pending = [buf.subarray(cut)];
      pendingBytes = buf.length - cut;
      // The cut is on a character boundary, so the decoder holds nothing back for valid UTF-8.
      await emit(decoder.write(buf.subarray(0, cut)));
      if (signal.aborted) return;
    }
  }

  if (!chunked) {
    const body = Buffer.concat(pending).toString('utf8');
    sink.complete({ status_code: res.status, headers: res.headers, body, token_counts: ok ? usageFromJsonBody(body) : undefined });
    return;
  }
  await emit(decoder.write(Buffer.concat(pending)));
  await emit(decoder.end());
  if (signal.aborted) return;
  sink.complete({ status_code: res.status, headers: res.headers, token_counts: usage?.finish() });
}

/**
 * Where to cut `buf` (longer than `max`) so that the first piece has at most `max` bytes and no
 * UTF-8 character is split: back off over continuation bytes (10xxxxxx), at most 3 of them.
 */
export function utf8Cut(buf: Buffer, max: number): number {
  let cut = max;
  for (let back = 0; back < 3 && cut > 0 && (buf[cut] & 0xc0) === 0x80; back++) cut--;
  // Still inside a run of continuation bytes: not UTF-8 anyway, cut at the limit.
  return cut > 0 && (buf[cut] & 0xc0) !== 0x80 ? cut : max;
}
