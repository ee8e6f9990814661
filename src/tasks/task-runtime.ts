import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit, Optional } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config';
import { CLOCK, Clock, TimerHandle } from '../common/clock';
import { Errors, GatewayError, isRetriable, kindOf } from '../common/gateway-error';
import { Dispatcher } from '../dispatch/dispatcher.service';
import { capabilitiesOf } from '../fleet/worker-snapshot';
import type { RelayRequest } from '../dispatch/relay-request';
import { AdmissionQueue } from '../queue/admission-queue';
import { JOB_ARTIFACTS, JobArtifacts, NO_JOB_ARTIFACTS } from '../artifacts/job-artifacts.port';
import { CancelReason } from '../protocol';
import { SessionBudgetStore, SessionUsage } from './session-budgets';
import { predictStart } from './start-estimator';
import { Fleet } from '../fleet/fleet.service';
import { FinalStatus, Task, TaskError } from './task';
import { jobArtifactOf } from './task-artifact';
import { TaskHandlers } from './task-sink';
import { LocalTaskLocator, TaskLocator } from './task-locator';
import { TasksConfig } from '../config/sections/tasks';
import type { StreamUsage } from './worker-chunk-parser';

/** `started` is repeated for a new position, or a prediction that moved by this much (and 10 %). */
const PREDICTION_STEP_MS = 1000;

/**
 * Every task of this gateway, from admission to pruning: what the dispatcher reports becomes the
 * task's events; a periodic tick repeats `started` while it waits, sends `metrics`, enforces
 * session time budgets and forgets tasks whose retention is over. All synchronous, in memory.
 */
@Injectable()
export class TaskRuntime implements TaskHandlers, OnModuleInit, OnModuleDestroy {
  private readonly log = new Logger('Tasks');
  private readonly config: TasksConfig;
  /** By tenant and task id: a task exists only for its tenant. */
  private readonly tasks = new Map<string, Task>();
  /** Tasks that have not finished. */
  private readonly live = new Set<Task>();
  /** Finished tasks, oldest first, until their retention is over. */
  private ended: Task[] = [];
  private endedHead = 0;
  /** The footprints of the finished tasks kept: bounded by `tasks.max_retained_bytes`. */
  private retainedBytes = 0;
  /** Tasks on a worker, by budget key: their running time counts for their session. */
  private readonly running = new Map<string, Set<Task>>();
  private timers: TimerHandle[] = [];

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    @Inject(CLOCK) private readonly clock: Clock,
    private readonly dispatcher: Dispatcher,
    private readonly queue: AdmissionQueue<RelayRequest>,
    private readonly fleet: Fleet,
    private readonly budgets: SessionBudgetStore,
    @Optional() @Inject(JOB_ARTIFACTS) private readonly artifacts: JobArtifacts = NO_JOB_ARTIFACTS,
    @Optional() private readonly locator: TaskLocator = new LocalTaskLocator(),
  ) {
    this.config = config.tasks;
  }

  onModuleInit(): void {
    this.timers = [
      this.clock.setInterval(() => this.tick(), this.config.positionIntervalMs),
      this.clock.setInterval(() => this.keepalive(), this.config.keepaliveMs),
    ];
  }

  onModuleDestroy(): void {
    for (const t of this.timers) this.clock.clearInterval(t);
    this.timers = [];
  }

  // ---------------------------------------------------------------- registry

  find(tenant: string, id: string): Task | undefined {
    return this.tasks.get(keyOf(tenant, id));
  }

  /** An admitted task: kept, announced (`started` while it waits, `metrics`) and logged. */
  register(task: Task, relay: RelayRequest): void {
    const now = this.clock.now();
    this.tasks.set(keyOf(task.tenant, task.id), task);
    this.live.add(task);
    task.pool ??= relay.provider?.name;
    if (relay.phase === 'queued') this.reportPosition(task, relay, relay.queuePosition, now);
    this.publishMetrics(task, relay, now);
    this.log.log({
      msg: 'task admitted',
      task_id: task.id,
      tenant: task.tenant,
      session_id: task.request.sessionId,
      model: task.request.model,
      pool: task.pool,
      status: task.status,
      queue_position: task.queuePosition,
      predicted_start_ms: task.predictedStartMs,
      correlation_id: task.correlationId,
    });
  }

  /** Tokens and running time its session has spent, the running tasks' time so far included. */
  sessionUsage(key: string, now: number): SessionUsage {
    const stored = this.budgets.usage(key);
    let timeMs = stored.timeMs;
    for (const t of this.running.get(key) ?? []) timeMs += now - t.runningSince;
    return { tokens: stored.tokens, timeMs };
  }

  // ---------------------------------------------------------------- ending a task

  /** The client's cancel: at once no event but the final one; the worker gets `cancel`. Idempotent. */
  cancel(task: Task): void {
    if (task.finished || !task.relay) return;
    this.dispatcher.cancel(task.relay, 'client_disconnect');
    this.end(task, 'cancelled', 'error', { code: 'cancelled', message: 'The task was cancelled by its client', retriable: false });
  }

  /** The gateway ends the task with an error (its request leaves the queue or its worker). */
  private stop(task: Task, status: FinalStatus, reason: CancelReason, error: GatewayError): void {
    if (task.finished) return;
    task.stopping = status;
    // The dispatcher hands the error (with the pool and engine) back through the sink.
    if (!task.relay || !this.dispatcher.cancel(task.relay, reason, error)) this.failed(task, error);
    task.stopping = undefined;
  }

  private end(task: Task, status: FinalStatus, type: 'end' | 'error', data: object): void {
    if (task.finished) return;
    const now = this.clock.now();
    if (type === 'error') task.error = data as TaskError & Record<string, unknown>;
    task.finish(status, type, data, now);
    this.live.delete(task);
    this.settleBudget(task, now);
    try {
      task.artifactId = this.artifacts.recordJob(jobArtifactOf(task)) || undefined;
    } catch (e) {
      this.log.warn({ msg: 'task artifact not recorded', task_id: task.id, error: (e as Error).message });
    }
    task.footprint = footprintOf(task);
    this.retainedBytes += task.footprint;
    this.ended.push(task);
    this.locator.ended(task.tenant, task.id, this.config.retentionMs);
    this.prune(now);
    this.log.log({
      msg: 'task ended',
      task_id: task.id,
      tenant: task.tenant,
      status,
      code: task.error?.code,
      tokens_out: task.tokensOut,
      decode_time_ms: task.decodeTimeMs(now),
      queue_wait_ms: task.queueWaitMs,
      correlation_id: task.correlationId,
    });
  }

  // ---------------------------------------------------------------- what the dispatcher reports

  routed(task: Task, servedModel: string): void {
    const relay = task.relay;
    if (!relay || task.finished) return;
    const now = this.clock.now();
    task.servedModel = servedModel;
    task.runner = relay.worker?.runner;
    task.workerContext = relay.worker && capabilitiesOf(relay.worker, servedModel)?.context_length;
    task.pool = relay.worker?.provider ?? relay.provider?.name;
    task.status = 'running';
    if (!task.runningSince) {
      task.runningSince = now;
      let set = this.running.get(task.budgetKey);
      if (!set) this.running.set(task.budgetKey, (set = new Set()));
      set.add(task);
      this.charge(task, task.promptTokens, now);
    }
    this.reportPosition(task, relay, 0, now);
    this.log.log({
      msg: 'task started',
      task_id: task.id,
      pool: task.pool,
      worker_id: relay.worker?.id,
      model: servedModel,
      queue_position: 0,
      predicted_start_ms: 0,
      queue_wait_ms: relay.waitedMs,
      correlation_id: task.correlationId,
    });
  }

  text(task: Task, t: string): void {
    if (task.finished) return;
    const limit = task.limits.tokens;
    if (limit !== undefined) {
      // A token the session cannot pay for is not delivered: the task stops before it.
      const used = this.budgets.usage(task.budgetKey).tokens;
      if (used + 1 > limit) return this.stop(task, 'cancelled', 'client_disconnect', Errors.sessionBudgetExceeded({ budget: 'tokens', limit, used }));
    }
    if (!task.publish('token', { t, i: task.tokens })) return this.overflow(task);
    task.tokens++;
    this.charge(task, 1, this.clock.now());
  }

  usage(task: Task, usage: StreamUsage): void {
    task.usage = { ...task.usage, ...usage };
  }

  completed(task: Task): void {
    const decode = task.decodeTimeMs(this.clock.now());
    this.end(task, 'completed', 'end', { tokens_out: task.tokensOut, decode_time_ms: decode, decode_ms: decode });
  }

  backendError(task: Task, status: number, body: string): void {
    const detail = backendMessage(body);
    const error = Errors.workerError().with({
      fields: { backend_status: status, pool_id: task.pool, engine: task.runner?.type },
    });
    const data = errorEvent(error, `The backend answered HTTP ${status}${detail ? `: ${detail}` : ''}`);
    // A request the backend refused as such fails the same way again.
    if (status < 500) {
      data.retriable = false;
      delete data.retry_after_ms;
    }
    this.end(task, 'failed', 'error', data);
  }

  failed(task: Task, error: GatewayError): void {
    if (task.admitting) {
      task.admissionError = error;
      return;
    }
    // A worker that went away is no longer the request's: the task still knows what it ran on.
    const engine = task.runner?.type;
    this.end(task, task.stopping ?? 'failed', 'error', errorEvent(engine && !error.details.fields?.engine ? error.with({ fields: { engine } }) : error));
  }

  queueWaited(task: Task, ms: number): void {
    task.queueWaitMs = ms;
  }

  // ---------------------------------------------------------------- periodic work

  /** Positions and predictions of waiting tasks, time budgets of running ones, metrics, pruning. */
  tick(): void {
    const now = this.clock.now();
    let positions: Map<RelayRequest, number> | undefined;
    // Slots serving each pool's model, counted once per tick however many of its tasks wait.
    let slots: Map<string, number> | undefined;
    for (const task of this.live) {
      const relay = task.relay!;
      if (relay.phase === 'queued') {
        // Back in the queue: its worker went away before the first byte.
        task.status = 'queued';
        positions ??= this.queue.positions(now);
        this.reportPosition(task, relay, positions.get(relay) ?? Math.max(1, task.queuePosition), now, (slots ??= new Map()));
      } else this.checkTime(task, now);
      if (!task.finished && now - task.metricsAt >= this.config.metricsIntervalMs) this.publishMetrics(task, relay, now);
    }
    this.prune(now);
  }

  /** `: keepalive` to every reader of a waiting task (proxies close silent connections). */
  keepalive(): void {
    for (const task of this.live) if (task.relay?.phase === 'queued') task.comment('keepalive');
  }

  private checkTime(task: Task, now: number): void {
    const limit = task.limits.timeMs;
    if (limit === undefined || !task.runningSince) return;
    const used = this.sessionUsage(task.budgetKey, now).timeMs;
    if (used >= limit) this.stop(task, 'cancelled', 'timeout', Errors.sessionBudgetExceeded({ budget: 'time', limit, used }));
  }

  /** Forgets finished tasks past their retention, and the oldest while they hold too much memory together. */
  private prune(now: number): void {
    while (this.endedHead < this.ended.length) {
      const oldest = this.ended[this.endedHead];
      if (now - oldest.endedAt < this.config.retentionMs && this.retainedBytes <= this.config.maxRetainedBytes) break;
      const task = this.ended[this.endedHead++];
      this.retainedBytes -= task.footprint;
      const key = keyOf(task.tenant, task.id);
      if (this.tasks.get(key) !== task) continue;
      this.tasks.delete(key);
      void this.locator.release(task.tenant, task.id);
    }
    if (this.endedHead > 1024 && this.endedHead * 2 > this.ended.length) {
      this.ended = this.ended.slice(this.endedHead);
      this.endedHead = 0;
    }
    this.budgets.prune(now);
  }

  // ---------------------------------------------------------------- events

  /** `started` with the task's place in line, when it changed enough to be worth telling. */
  private reportPosition(task: Task, relay: RelayRequest, position: number, now: number, slotCache?: Map<string, number>): void {
    const pool = relay.provider?.name;
    const predicted = pool === undefined ? null : predictStart(this.queue.stats, this.fleet.directory, pool, relay.targetModel, position, slotCache);
    const last = task.predictedStartMs;
    const moved =
      position !== task.queuePosition ||
      (predicted === null) !== (last === null) ||
      (predicted !== null && last !== null && Math.abs(predicted - last) >= Math.max(PREDICTION_STEP_MS, 0.1 * last));
    if (!moved) return;
    task.queuePosition = position;
    task.predictedStartMs = predicted;
    if (!task.publish('started', { queue_position: position, predicted_start_ms: predicted })) return this.overflow(task);
    if (position > 0) this.log.debug({ msg: 'task started event', task_id: task.id, queue_position: position, predicted_start_ms: predicted });
  }

  private publishMetrics(task: Task, relay: RelayRequest, now: number): void {
    const data: Record<string, unknown> = { queue_depth: this.queue.depth(relay.provider?.name ?? ''), tokens_out: task.tokensOut };
    if (relay.phase === 'queued') data.queue_position = Math.max(0, task.queuePosition);
    const { tokens, timeMs } = task.limits;
    if (tokens !== undefined || timeMs !== undefined) {
      const used = this.sessionUsage(task.budgetKey, now);
      const remaining: Record<string, number> = {};
      if (tokens !== undefined) remaining.tokens = Math.max(0, tokens - used.tokens);
      if (timeMs !== undefined) remaining.time_secs = Math.max(0, Math.round((timeMs - used.timeMs) / 1000));
      data.budget_remaining = remaining;
    }
    const text = JSON.stringify(data);
    task.metricsAt = now;
    if (text === task.lastMetrics) return;
    task.lastMetrics = text;
    if (!task.publish('metrics', data)) this.overflow(task);
  }

  private overflow(task: Task): void {
    const error = new GatewayError(
      'stream_too_large',
      `The task's event buffer is full (tasks.max_events ${this.config.maxEvents}, tasks.max_bytes ${this.config.maxBytes}): the task was stopped`,
    );
    this.stop(task, 'failed', 'stream_too_large', error);
  }

  // ---------------------------------------------------------------- budgets

  private tracksBudget(task: Task): boolean {
    return task.request.sessionId !== undefined || task.limits.tokens !== undefined || task.limits.timeMs !== undefined;
  }

  private charge(task: Task, tokens: number, now: number): void {
    if (!this.tracksBudget(task) || tokens === 0) return;
    task.charged += tokens;
    this.budgets.addTokens(task.budgetKey, tokens, now);
  }

  /** The end: the running time joins the session's, and reported usage replaces the estimates. */
  private settleBudget(task: Task, now: number): void {
    const set = this.running.get(task.budgetKey);
    if (set?.delete(task) && set.size === 0) this.running.delete(task.budgetKey);
    if (!this.tracksBudget(task)) return;
    if (task.runningSince) this.budgets.addTime(task.budgetKey, now - task.runningSince, now);
    const u = task.usage;
    if (u) this.charge(task, (u.promptTokens ?? task.promptTokens) + (u.completionTokens ?? task.tokens) - task.charged, now);
  }
}

/** Bytes a finished task holds: its events, its request (the prompt already dropped) and the rest of it. */
function footprintOf(task: Task): number {
  return task.events.bytes + JSON.stringify(task.request.params).length + 1024;
}

function keyOf(tenant: string, id: string): string {
  return `${tenant}\u0000${id}`;
}

/** The `error` event of a task: `{code, message, retriable, retry_after_ms?, kind, …context}`. */
export function errorEvent(error: GatewayError, message = error.message): TaskError & Record<string, unknown> {
  const data: TaskError & Record<string, unknown> = { code: error.code, message, retriable: isRetriable(error.code) };
  if (error.details.retryAfterMs !== undefined) data.retry_after_ms = error.details.retryAfterMs;
  data.kind = kindOf(error.code);
  for (const [k, v] of Object.entries(error.details.fields ?? {})) if (v !== undefined && !(k in data)) data[k] = v;
  return data;
}

/** The backend's own error message (OpenAI-style JSON), shortened; none for anything else. */
function backendMessage(body: string): string | undefined {
  try {
    const json = JSON.parse(body) as { error?: { message?: unknown } | string; message?: unknown };
    const m = typeof json.error === 'string' ? json.error : (json.error?.message ?? json.message);
    return typeof m === 'string' && m.trim() ? m.trim().slice(0, 200) : undefined;
  } catch {
    return undefined;
  }
}
