import { GatewayError } from '../common/gateway-error';
import type { ResponseSink } from '../dispatch/relay-request';
import type { Task } from './task';
import { ChunkListener, readPayload, StreamUsage, WorkerChunkParser } from './worker-chunk-parser';

/** What a task's request tells the task runtime, once the dispatcher drives it. */
export interface TaskHandlers {
  routed(task: Task, servedModel: string): void;
  text(task: Task, t: string): void;
  usage(task: Task, usage: StreamUsage): void;
  completed(task: Task): void;
  /** The backend answered with an error status (no stream). */
  backendError(task: Task, status: number, body: string): void;
  failed(task: Task, error: GatewayError): void;
  queueWaited(task: Task, ms: number): void;
}

/**
 * The dispatcher's side of a task: the worker's SSE chunks become text deltas and usage (split
 * lines and all), its completion the task's end. A task has no HTTP client of its own: it runs
 * whether or not anyone reads its stream, so the "client" never goes away and never pushes back.
 */
export class TaskSink implements ResponseSink, ChunkListener {
  readonly clientGone = false;
  private readonly parser: WorkerChunkParser;
  /** A non-2xx status the worker announced before the body (`response_start`). */
  private errorStatus: number | undefined;
  private errorBody = '';

  constructor(
    private readonly task: Task,
    private readonly handlers: TaskHandlers,
  ) {
    this.parser = new WorkerChunkParser(task.request.endpoint, this);
  }

  text(t: string): void {
    this.handlers.text(this.task, t);
  }

  usage(u: StreamUsage): void {
    this.handlers.usage(this.task, u);
  }

  startStream(status = 200): void {
    if (status >= 300) this.errorStatus = status;
  }

  writeChunk(chunk: string): boolean {
    if (this.task.finished) return true;
    if (this.errorStatus !== undefined) {
      if (this.errorBody.length < 4096) this.errorBody += chunk;
    } else this.task.batch(() => this.parser.feed(chunk));
    return true;
  }

  /** Chunks go to the task's parser at once: nothing waits for a reader. */
  readonly pendingBytes = 0;

  onDrain(): void {
    // writeChunk never reports a full buffer.
  }

  abort(): void {
    // No connection of its own to cut.
  }

  endStream(): void {
    if (this.task.finished) return;
    if (this.errorStatus !== undefined) return this.handlers.backendError(this.task, this.errorStatus, this.errorBody);
    this.parser.end();
    this.handlers.completed(this.task);
  }

  /** A whole answer: the backend did not stream (or failed before streaming). */
  sendComplete(status: number, _headers: Record<string, string>, collected: string | readonly string[]): void {
    if (this.task.finished) return;
    const body = typeof collected === 'string' ? collected : collected.join('');
    if (status < 200 || status >= 300) return this.handlers.backendError(this.task, status, body);
    // A JSON completion, or an SSE stream the worker delivered in one piece.
    if (!readPayload(body, this.task.request.endpoint, this)) {
      this.parser.feed(body);
      this.parser.end();
    }
    if (!this.task.finished) this.handlers.completed(this.task);
  }

  fail(error: GatewayError): void {
    this.handlers.failed(this.task, error);
  }

  routed(servedModel: string): void {
    this.handlers.routed(this.task, servedModel);
  }

  queueWaited(ms: number): void {
    this.handlers.queueWaited(this.task, ms);
  }
}
