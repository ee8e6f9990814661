import type { Logger } from '@nestjs/common';
import type { Clock, TimerHandle } from '../common/clock';
import type { LifecycleStatus } from '../protocol';
import type { WorkerSession } from '../fleet/worker-session';

/**
 * What the hold waits for: the worker's own word on how the operation ended (it timed out after
 * it was sent), or its model list read after the end (`models_update`).
 */
type Awaiting = 'outcome' | 'models';

interface Settling {
  taskId: string;
  models: Set<string>;
  awaiting: Awaiting;
  timer: TimerHandle;
}

/**
 * Models an unload (or a load's eviction) took out of routing on a worker, kept out after the
 * operation ended for as long as the worker's advertised models may not tell the truth yet:
 *
 * - it **completed** while the worker still advertises the model: the worker may not have sent
 *   `models_update` first, or its backend serves the model on demand. It is asked for its models
 *   (`models_refresh`); its next `models_update` releases the hold, routing then follows that list.
 * - it **timed out** after it was sent: the worker may still be unloading. A late `lifecycle_status`
 *   of the task decides (`failed` / `unsupported`: released; `completed`: as above), or a
 *   `models_update` without the model (it is gone: nothing left to hold).
 *
 * Never longer than `timeoutMs` after the end: then released, and routing follows the worker's list.
 * A new operation draining the model on that worker takes its hold over. Frames arrive here on
 * the hot path: one map look-up per worker when nothing settles.
 */
export class SettlingHolds {
  private readonly byWorker = new Map<WorkerSession, Map<string, Settling>>();

  constructor(
    /** Puts the models back into routing on the worker (as far as it advertises them). */
    private readonly release: (worker: WorkerSession, models: string[]) => void,
    /** Asks the worker for its models (`models_refresh`). */
    private readonly refresh: (worker: WorkerSession) => void,
    private readonly clock: Clock,
    private readonly timeoutMs: number,
    private readonly log: Logger,
  ) {}

  /** The task completed on `worker`: holds on models it no longer advertises go, the others wait for its refreshed list. */
  afterCompleted(worker: WorkerSession, taskId: string, models: readonly string[]): void {
    const listed = this.releaseUnlisted(worker, models);
    if (listed.length === 0) return this.drop(worker, taskId);
    this.entry(worker, taskId, listed).awaiting = 'models';
    this.refresh(worker);
  }

  /** The task was sent to `worker` but its answer never came: its holds wait for the worker's word. */
  afterTimeout(worker: WorkerSession, taskId: string, models: readonly string[]): void {
    const listed = this.releaseUnlisted(worker, models);
    if (listed.length) this.entry(worker, taskId, listed).awaiting = 'outcome';
  }

  /** A `lifecycle_status` for a task whose part already ended; false when no hold of it settles here. */
  onStatus(worker: WorkerSession, taskId: string, status: LifecycleStatus): boolean {
    const entry = this.byWorker.get(worker)?.get(taskId);
    if (!entry) return false;
    if (status === 'completed') {
      if (entry.awaiting === 'outcome') this.afterCompleted(worker, taskId, [...entry.models]);
    } else if (status === 'failed' || status === 'unsupported') {
      this.settle(worker, entry);
    }
    this.log.log(`worker ${worker.id} reported ${status} for task ${taskId} after its part ended`);
    return true;
  }

  /** The worker sent `models_update` (its new list is in place). */
  onModelsUpdate(worker: WorkerSession): void {
    const entries = this.byWorker.get(worker);
    if (!entries) return;
    for (const entry of [...entries.values()]) {
      if (entry.awaiting === 'models') this.settle(worker, entry);
      else {
        entry.models = new Set(this.releaseUnlisted(worker, entry.models));
        if (entry.models.size === 0) this.drop(worker, entry.taskId);
      }
    }
  }

  /** A new operation holds `model` on `worker` itself now. */
  takeOver(worker: WorkerSession, model: string): void {
    for (const entry of [...(this.byWorker.get(worker)?.values() ?? [])]) {
      if (entry.models.delete(model) && entry.models.size === 0) this.drop(worker, entry.taskId);
    }
  }

  /** The worker left: its holds left with it. */
  forget(worker: WorkerSession): void {
    for (const entry of this.byWorker.get(worker)?.values() ?? []) this.clock.clearTimeout(entry.timer);
    this.byWorker.delete(worker);
  }

  /** Releases the holds on `models` the worker does not advertise any more; answers the others (still held). */
  private releaseUnlisted(worker: WorkerSession, models: Iterable<string>): string[] {
    const listed: string[] = [];
    const gone: string[] = [];
    for (const model of models) (worker.wildcard || worker.models.has(model) ? listed : gone).push(model);
    if (gone.length) this.release(worker, gone);
    return listed;
  }

  private entry(worker: WorkerSession, taskId: string, models: string[]): Settling {
    let entries = this.byWorker.get(worker);
    if (!entries) this.byWorker.set(worker, (entries = new Map()));
    const existing = entries.get(taskId);
    if (existing) {
      existing.models = new Set(models);
      return existing;
    }
    const entry: Settling = {
      taskId,
      models: new Set(models),
      awaiting: 'outcome',
      timer: this.clock.setTimeout(() => {
        this.log.warn(
          `worker ${worker.id} gave no word on task ${taskId} within ${Math.round(this.timeoutMs / 1000)} s of its end: ` +
            `${[...entry.models].join(', ')} routed to it again as it advertises`,
        );
        this.settle(worker, entry);
      }, this.timeoutMs),
    };
    entries.set(taskId, entry);
    return entry;
  }

  private settle(worker: WorkerSession, entry: Settling): void {
    this.drop(worker, entry.taskId);
    this.release(worker, [...entry.models]);
  }

  private drop(worker: WorkerSession, taskId: string): void {
    const entries = this.byWorker.get(worker);
    const entry = entries?.get(taskId);
    if (!entry) return;
    this.clock.clearTimeout(entry.timer);
    entries!.delete(taskId);
    if (entries!.size === 0) this.byWorker.delete(worker);
  }
}
