import type { GatewayError } from '../common/gateway-error';
import type { RelayRequest } from '../dispatch/relay-request';
import type { RunnerInfo } from '../protocol';
import type { BudgetLimits } from './session-budgets';
import { TaskEventLog, TaskEventType } from './task-events';
import type { TaskRequest } from './task-request';
import type { StreamUsage } from './worker-chunk-parser';

export type TaskStatus = 'queued' | 'running' | 'completed' | 'failed' | 'cancelled';
export type FinalStatus = Exclude<TaskStatus, 'queued' | 'running'>;

/** One open `GET /v1/tasks/:id/stream`. */
export interface TaskReader {
  /** Starts the reader after event `afterId`: it takes what it missed from the task's log. */
  replay(log: TaskEventLog, afterId: number): void;
  /** Frames the task has just kept in its log, the last of them event `lastId`. */
  write(frames: string, lastId: number): void;
  /** A comment (`: keepalive`): not an event, not kept. */
  comment(text: string): void;
  /** The task has finished: its last event has been written. */
  end(): void;
}

/** The error a task ended with, as its `error` event and its status say. */
export interface TaskError {
  code: string;
  message: string;
  retriable: boolean;
}

/** What a task keeps of its request: everything but the worker's body (the prompt). */
export type TaskParams = Omit<TaskRequest, 'workerJson'>;

export interface TaskInit {
  id: string;
  tenant: string;
  request: TaskParams;
  /** Where its budget usage is counted (see `sessionKey`). */
  budgetKey: string;
  limits: BudgetLimits;
  /** Estimated prompt tokens (characters / 4). */
  promptTokens: number;
  correlationId: string;
  createdAt: number;
  maxEvents: number;
  maxBytes: number;
}

/**
 * One task: its request on the dispatcher, its event log and its readers. Every event is kept in
 * the log first and then written to every reader, so readers attached at any time see the same
 * stream. Nothing is published once the task has finished.
 */
export class Task {
  readonly id: string;
  readonly tenant: string;
  readonly request: TaskParams;
  readonly budgetKey: string;
  readonly limits: BudgetLimits;
  readonly promptTokens: number;
  readonly correlationId: string;
  readonly createdAt: number;
  readonly events: TaskEventLog;
  readonly readers = new Set<TaskReader>();

  /** Its request on the dispatcher while the task is live; let go at its end (the prompt with it). */
  relay: RelayRequest | undefined;
  /** The pool it waits in, then the pool of the worker that took it. */
  pool: string | undefined;
  status: TaskStatus = 'queued';
  /** What `started` last said (so it is repeated only when something changed). */
  queuePosition = -1;
  predictedStartMs: number | null = null;
  /** When a worker first got the task (0 = never). */
  runningSince = 0;
  endedAt = 0;
  /** Token events sent; also the index of the next one. */
  tokens = 0;
  usage: StreamUsage | undefined;
  /** Tokens charged to its session so far (estimate until the backend reports usage). */
  charged = 0;
  queueWaitMs = 0;
  servedModel: string | undefined;
  /** The inference server of the worker that last took it (a lost worker's too). */
  runner: RunnerInfo | undefined;
  /** The context length that worker advertises for the served model, when it does. */
  workerContext: number | undefined;
  error: (TaskError & Record<string, unknown>) | undefined;
  artifactId: string | undefined;
  /** When `metrics` were last looked at. */
  metricsAt = 0;
  /** The last `metrics` data sent (a frame goes out only when it changed). */
  lastMetrics = '';
  /** What the finished task holds in memory while it is kept (its events and request), set when it ends. */
  footprint = 0;
  /** Set while the gateway ends the task itself (budget, overflow): the status it ends with. */
  stopping: FinalStatus | undefined;
  /** True while `POST /v1/tasks` decides: a refusal then is the HTTP answer, not an event. */
  admitting = false;
  admissionError: GatewayError | undefined;

  constructor(init: TaskInit) {
    this.id = init.id;
    this.tenant = init.tenant;
    const { workerJson: _prompt, ...params } = init.request as TaskRequest;
    this.request = params;
    this.budgetKey = init.budgetKey;
    this.limits = init.limits;
    this.promptTokens = init.promptTokens;
    this.correlationId = init.correlationId;
    this.createdAt = init.createdAt;
    this.events = new TaskEventLog(init.maxEvents, init.maxBytes);
  }

  get finished(): boolean {
    return this.endedAt > 0;
  }

  /** `tokens_out`: what the backend reported, else the token events sent. */
  get tokensOut(): number {
    return this.usage?.completionTokens ?? this.tokens;
  }

  /** Time on a worker: from the first assignment to the end (or now). */
  decodeTimeMs(now: number): number {
    if (!this.runningSince) return 0;
    return (this.endedAt || now) - this.runningSince;
  }

  /** Keeps the event and writes it to every reader; false when the log is full (nothing was sent). */
  publish(type: TaskEventType, data: object): boolean {
    if (this.finished) return true;
    const frame = this.events.append(type, data);
    if (frame === undefined) return false;
    if (this.batched) this.batched.push(frame);
    else for (const r of this.readers) r.write(frame, this.events.lastId);
    return true;
  }

  /**
   * Runs `fn` with the events it publishes written to each reader in one write at its end (the
   * tokens of one worker chunk), rather than one write per event.
   */
  batch(fn: () => void): void {
    if (this.batched) return fn();
    this.batched = [];
    try {
      fn();
    } finally {
      this.flush();
    }
  }

  private batched: string[] | undefined;

  private flush(): void {
    const frames = this.batched;
    this.batched = undefined;
    if (!frames?.length) return;
    const text = frames.length === 1 ? frames[0] : frames.join('');
    for (const r of this.readers) r.write(text, this.events.lastId);
  }

  /** The terminal event: kept whatever the bound, written, and every reader's stream ends. */
  finish(status: FinalStatus, type: 'end' | 'error', data: object, now: number): void {
    if (this.finished) return;
    this.flush();
    const frame = this.events.append(type, data, true)!;
    this.status = status;
    this.endedAt = Math.max(now, this.createdAt + 1);
    this.relay = undefined;
    for (const r of this.readers) {
      r.write(frame, this.events.lastId);
      r.end();
    }
    this.readers.clear();
  }

  /** A comment line (`: keepalive`): not an event, so not kept. */
  comment(text: string): void {
    const line = `: ${text}\n\n`;
    for (const r of this.readers) r.comment(line);
  }

  /** Replays what the reader has not seen, then keeps it informed (or ends it if the task has finished). */
  attach(reader: TaskReader, afterId: number): void {
    reader.replay(this.events, afterId);
    if (this.finished) reader.end();
    else this.readers.add(reader);
  }

  detach(reader: TaskReader): void {
    this.readers.delete(reader);
  }
}
