import { StringDecoder } from 'node:string_decoder';
import { RequestMessage, TokenCounts } from '../protocol';
import { BackendClient, BackendUnavailableError } from './backend-client';
import { SseUsageTracker, usageFromJsonBody } from './sse-usage';

export const ErrorCodes = {
  BACKEND_UNAVAILABLE: 'backend_unavailable',
  BACKEND_STREAM_FAILED: 'backend_stream_failed',
  BACKEND_RESPONSE_FAILED: 'backend_response_failed',
  WORKER_SHUTTING_DOWN: 'worker_shutting_down',
  DUPLICATE_REQUEST_ID: 'duplicate_request_id',
} as const;

export interface CompleteParts {
  status_code: number;
  headers?: Record<string, string>;
  body?: string;
  token_counts?: TokenCounts;
}

/** Where one request's answer goes. The daemon turns these into wire frames. */
export interface ResponseSink {
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
export async function runBackendRequest(
  backend: BackendClient,
  request: RequestMessage,
  signal: AbortSignal,
  sink: ResponseSink,
): Promise<void> {
  let headReceived = false;
  try {
    const res = await backend.post(request.endpoint_path, request.body, request.headers, signal);
    headReceived = true;
    const ok = res.status >= 200 && res.status <= 299;

    if (!request.is_streaming || !ok) {
      // Non-2xx answers to streaming requests come back whole so the gateway can relay the real status.
      const chunks: Buffer[] = [];
      for await (const c of res.body) chunks.push(c as Buffer);
      const body = Buffer.concat(chunks).toString('utf8');
      sink.complete({
        status_code: res.status,
        headers: res.headers,
        body,
        token_counts: ok ? usageFromJsonBody(body) : undefined,
      });
      return;
    }

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
