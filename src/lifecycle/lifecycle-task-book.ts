import type { Logger } from '@nestjs/common';
import type { AppConfig } from '../config';
import type { Clock } from '../common/clock';
import { SerialWriteQueue } from '../common/serial-write-queue';
import type { WorkerSession } from '../fleet/worker-session';
import { LifecycleTask, partFinished, TaskPart, taskError, taskStatus } from './lifecycle-task';
import type { LoadingModel } from './loading-models';
import { LoadTaskRecord, LoadTaskStore } from './load-task-store';
import type { RunningPart, RunningTask } from './running-task';

/**
 * Progress alone is written at most this often per load (state changes at once): other replicas
 * answer `GET /v1/models/load/:taskId` from the row, and cluster mode holds a change on every replica
 * within a second. A worker may report progress many times a second; one row per load a second,
 * each write coalescing every report since the last, keeps the load on the database bounded.
 */
export const PROGRESS_WRITE_MS = 1000;
const RESTARTED = 'gateway_restarted: the gateway restarted during the load; the worker may still have finished it (see /v1/capabilities)';

/**
 * The lifecycle tasks this process runs, in memory: which task holds which conflict key on which
 * worker, who listens for changes, and the model loads written behind to the database (progress
 * alone at most every PROGRESS_WRITE_MS, the last report never later). Unloads and flushes are
 * never written: they are answered when they end.
 */
export class LifecycleTaskBook {
  private readonly tasks = new Map<string, RunningTask>();
  /** `<worker id>\0<conflict key>` → id of the task holding it. */
  private readonly running = new Map<string, string>();
  private readonly writes: SerialWriteQueue;
  private readonly listeners: Array<() => void> = [];

  constructor(
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly store: LoadTaskStore,
    private readonly log: Logger,
  ) {
    this.writes = new SerialWriteQueue(log);
  }

  /** Loads this gateway instance left unfinished when it stopped cannot be followed any more: they fail. */
  async closeLeftovers(): Promise<void> {
    try {
      const left = await this.store.unfinished(this.config.instanceId);
      const now = this.clock.now();
      for (const record of left) {
        for (const part of record.parts) if (!partFinished(part)) Object.assign(part, { status: 'failed', error: RESTARTED });
        await this.store.save({ ...record, status: taskStatus(record.parts), error: taskError(record.parts), updatedAt: now, finishedAt: now });
      }
      if (left.length) this.log.warn(`${left.length} model load(s) left unfinished by a previous run of ${this.config.instanceId} marked failed`);
    } catch (e) {
      this.log.warn(`could not close the model loads a previous run left unfinished: ${(e as Error).message}`);
    }
  }

  /** Resolves once every model load write queued so far is done. */
  whenIdle(): Promise<void> {
    return this.writes.whenIdle();
  }

  // ---------------------------------------------------------------- tasks and their keys

  get(taskId: string): RunningTask | undefined {
    return this.tasks.get(taskId);
  }

  /** Running tasks (a copy: finishing one while iterating is fine). */
  all(): RunningTask[] {
    return [...this.tasks.values()];
  }

  /** A persisted model load (finished, or of another run). */
  stored(taskId: string): Promise<LoadTaskRecord | undefined> {
    return this.store.get(taskId);
  }

  /** The task holding `key` on `worker`, if one runs. */
  readonly runningTaskOf = (worker: WorkerSession, key: string): string | undefined => this.running.get(`${worker.id}\u0000${key}`);

  /** Takes the conflict keys of each part (a concurrent request for the same target meets a 409) and adds the task. */
  add(rt: RunningTask): void {
    for (const rp of rt.parts.values()) for (const key of rp.keys) this.running.set(`${rp.worker.id}\u0000${key}`, rt.task.id);
    this.tasks.set(rt.task.id, rt);
  }

  /** A task whose acceptance could not be recorded: forgotten before any part ran. */
  abandon(rt: RunningTask): void {
    for (const rp of rt.parts.values()) this.releaseKeys(rt, rp);
    this.tasks.delete(rt.task.id);
  }

  /** The part's conflict keys, given back (where this task still holds them). */
  releaseKeys(rt: RunningTask, rp: RunningPart): void {
    for (const key of rp.keys) {
      const runKey = `${rp.worker.id}\u0000${key}`;
      if (this.running.get(runKey) === rt.task.id) this.running.delete(runKey);
    }
  }

  /** A finished unload or flush: answered now, kept nowhere. */
  forget(rt: RunningTask): void {
    this.tasks.delete(rt.task.id);
  }

  // ---------------------------------------------------------------- capabilities

  loadingIn(pool: string): LoadingModel[] {
    const byModel = new Map<string, TaskPart[]>();
    for (const { task } of this.tasks.values()) {
      if (task.operation !== 'model-load' || task.finishedAt !== undefined) continue;
      const parts = task.parts.filter((p) => p.pool === pool && !partFinished(p));
      if (parts.length) byModel.set(task.modelId!, [...(byModel.get(task.modelId!) ?? []), ...parts]);
    }
    return [...byModel].map(([id, parts]) => {
      const etas = parts.map((p) => p.etaSecs);
      return {
        id,
        progress: Math.round((parts.reduce((n, p) => n + p.progress, 0) / parts.length) * 1000) / 1000,
        ...(etas.every((e) => e !== undefined) ? { eta: Math.max(...(etas as number[])) } : {}),
      };
    });
  }

  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  // ---------------------------------------------------------------- persistence

  /**
   * A task moved: listeners hear of it, and a model load is written. A state change is written at
   * once; progress alone at most every PROGRESS_WRITE_MS, and never later: a report that comes
   * sooner is written when the interval ends (one timer per load, taking every report meanwhile).
   */
  changed(rt: RunningTask, significant: boolean): void {
    for (const listener of this.listeners) listener();
    if (rt.task.operation !== 'model-load') return;
    if (significant) return this.write(rt);
    if (rt.progressTimer !== undefined) return;
    const wait = rt.persistedAt + PROGRESS_WRITE_MS - this.clock.now();
    if (wait <= 0) return this.write(rt);
    rt.progressTimer = this.clock.setTimeout(() => {
      rt.progressTimer = undefined;
      this.write(rt);
    }, wait);
  }

  /** Writes the progress a timer still holds back (the process stops: nothing is left unwritten). */
  flushProgress(): void {
    for (const rt of this.tasks.values()) if (rt.progressTimer !== undefined) this.write(rt);
  }

  /** Retention: model loads last changed before the cutoff are deleted. */
  async prune(now: number): Promise<number> {
    const cutoff = now - this.config.lifecycle.taskRetentionMs;
    for (const [id, rt] of this.tasks) if (rt.task.finishedAt !== undefined && rt.task.finishedAt < cutoff) this.tasks.delete(id);
    return this.store.deleteUpdatedBefore(cutoff);
  }

  /**
   * Queues the load's row. A row still waiting in the queue is not queued twice: it is built when
   * its turn comes, from the task as it is then, so a slow database gets one pending write per
   * load, never a backlog of its progress.
   */
  private write(rt: RunningTask): void {
    if (rt.progressTimer !== undefined) this.clock.clearTimeout(rt.progressTimer);
    rt.progressTimer = undefined;
    rt.persistedAt = this.clock.now();
    if (rt.writeQueued) return;
    rt.writeQueued = this.writes.enqueue(`model load ${rt.task.id}`, async () => {
      rt.writeQueued = false;
      const finished = rt.task.finishedAt !== undefined;
      await this.store.save(this.recordOf(rt.task));
      if (finished && this.tasks.get(rt.task.id) === rt) this.tasks.delete(rt.task.id);
    });
  }

  private recordOf(task: LifecycleTask): LoadTaskRecord {
    const status = taskStatus(task.parts);
    return {
      id: task.id,
      modelId: task.modelId!,
      status,
      ...(status === 'failed' ? { error: taskError(task.parts) } : {}),
      options: task.options,
      parts: task.parts.map((p) => ({ ...p })),
      gatewayInstanceId: this.config.instanceId,
      createdAt: task.createdAt,
      updatedAt: task.updatedAt,
      ...(task.finishedAt !== undefined ? { finishedAt: task.finishedAt } : {}),
    };
  }
}
