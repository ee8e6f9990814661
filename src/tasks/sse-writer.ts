import type { ServerResponse } from 'node:http';
import { CORRELATION_HEADER } from '../observability/correlation-id';
import type { TaskReader } from './task';

const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
};

/**
 * One `GET /v1/tasks/:id/stream` on the raw response (the reply is hijacked): the frames as the
 * task formatted them (one write per worker chunk, see `Task.batch`). The socket's own buffer
 * absorbs a slow reader; what it can hold is bounded by the task's event log.
 */
export class SseWriter implements TaskReader {
  private closed = false;

  constructor(private readonly res: ServerResponse) {
    res.on('close', () => {
      this.closed = true;
    });
  }

  /** 200 and the SSE headers, with headers set before the handler (CORS) kept. */
  open(correlationId: string, preset: Record<string, string>): void {
    this.res.writeHead(200, { ...preset, ...SSE_HEADERS, [CORRELATION_HEADER]: correlationId });
    // Sends the headers now: a reader resuming at the last event may get nothing for a while.
    // (An HTTP/2 response has no flushHeaders: its headers go with the first write.)
    (this.res as Partial<Pick<ServerResponse, 'flushHeaders'>>).flushHeaders?.();
  }

  /** Runs `fn` once when the reader goes away before its stream ended. */
  onClose(fn: () => void): void {
    this.res.on('close', fn);
  }

  write(text: string): void {
    if (!this.closed) this.res.write(text);
  }

  end(): void {
    if (this.closed) return;
    this.closed = true;
    this.res.end();
  }
}
