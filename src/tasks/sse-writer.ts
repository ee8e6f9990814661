import type { ServerResponse } from 'node:http';
import type { Clock, TimerHandle } from '../common/clock';
import { CORRELATION_HEADER } from '../observability/correlation-id';
import type { TaskReader } from './task';
import type { TaskEventLog } from './task-events';

const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
};

/** What one write of a reader catching up from the log holds at most (the socket's usual high-water mark). */
const CATCH_UP_BYTES = 16 * 1024;

/** The parts of a response the writer uses (an HTTP/1.1 `ServerResponse` or an HTTP/2 compat response). */
type SseResponse = Pick<ServerResponse, 'write' | 'end' | 'on' | 'once' | 'writeHead' | 'destroy'> & Partial<Pick<ServerResponse, 'flushHeaders'>>;

/** A reader whose socket stays full this long is cut off (`SLOW_CLIENT_TIMEOUT_SECS`). */
export interface StallLimit {
  clock: Clock;
  timeoutMs: number;
}

/**
 * One `GET /v1/tasks/:id/stream` on the raw response (the reply is hijacked). While the socket
 * takes what it is given, the task's frames go out as the task formatted them (one write per
 * worker chunk, see `Task.batch`). Once the socket's buffer is full, the writer stops writing and
 * falls behind: the events wait in the task's log, which every reader shares, and are taken from
 * there piece by piece as the socket drains. So a slow reader costs one socket buffer, never a
 * copy of the stream, and holds up neither the task nor its other readers. One that takes nothing
 * for the stall limit is cut off (it would pin the task's log past its retention); it may resume
 * with `Last-Event-ID`.
 */
export class SseWriter implements TaskReader {
  private closed = false;
  private log: TaskEventLog | undefined;
  /** Id of the last event handed to the socket. */
  private sent = 0;
  /** The socket's buffer is full: events are taken from the log when it drains. */
  private behind = false;
  /** The task has finished: the response ends once the last event is out. */
  private ending = false;
  private stallTimer: TimerHandle | undefined;

  constructor(
    private readonly res: SseResponse,
    private readonly stall?: StallLimit,
  ) {
    res.on('close', () => {
      this.closed = true;
      this.clearStall();
    });
  }

  /** 200 and the SSE headers, with headers set before the handler (CORS) kept. */
  open(correlationId: string, preset: Record<string, string>): void {
    this.res.writeHead(200, { ...preset, ...SSE_HEADERS, [CORRELATION_HEADER]: correlationId });
    // Sends the headers now: a reader resuming at the last event may get nothing for a while.
    // (An HTTP/2 response has no flushHeaders: its headers go with the first write.)
    this.res.flushHeaders?.();
  }

  /** Runs `fn` once when the reader goes away before its stream ended. */
  onClose(fn: () => void): void {
    this.res.on('close', fn);
  }

  replay(log: TaskEventLog, afterId: number): void {
    this.log = log;
    this.sent = afterId;
    this.catchUp();
  }

  write(frames: string, lastId: number): void {
    if (this.closed || this.behind) return;
    this.sent = lastId;
    if (!this.res.write(frames)) this.fallBehind();
  }

  comment(text: string): void {
    // A reader that is behind has data waiting: it needs no keepalive.
    if (this.closed || this.behind) return;
    if (!this.res.write(text)) this.fallBehind();
  }

  end(): void {
    this.ending = true;
    if (!this.behind) this.finish();
  }

  private fallBehind(): void {
    this.behind = true;
    this.res.once('drain', () => this.catchUp());
    if (this.stall) this.stallTimer = this.stall.clock.setTimeout(() => this.cutOff(), this.stall.timeoutMs);
  }

  private cutOff(): void {
    this.stallTimer = undefined;
    if (this.closed) return;
    this.closed = true;
    this.res.destroy();
  }

  private clearStall(): void {
    if (!this.stallTimer) return;
    this.stall!.clock.clearTimeout(this.stallTimer);
    this.stallTimer = undefined;
  }

  /** Writes what the log holds beyond `sent` until the socket is full again, or ends the response. */
  private catchUp(): void {
    this.clearStall();
    this.behind = false;
    const log = this.log!;
    while (!this.closed && this.sent < log.lastId) {
      const { text, lastId } = log.slice(this.sent, CATCH_UP_BYTES);
      this.sent = lastId;
      if (!this.res.write(text)) return this.fallBehind();
    }
    if (this.ending) this.finish();
  }

  private finish(): void {
    if (this.closed) return;
    this.closed = true;
    this.res.end();
  }
}
