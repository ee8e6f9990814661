import type { Logger } from '@nestjs/common';
import type { AppConfig } from '../config';
import type { Clock } from '../common/clock';
import type { AuditTrail } from '../governance/audit-trail';
import type { LifecycleStatusMessage } from '../protocol';
import type { Fleet } from '../fleet/fleet.service';
import type { WorkerSession } from '../fleet/worker-session';
import { definedOnly } from './audit-context';
import { partFinished, PartStatus, TaskPart, taskError, taskStatus } from './lifecycle-task';
import type { LifecycleTaskBook } from './lifecycle-task-book';
import { drainModel } from './model-drain';
import { HoldsAfter, operationFailed, PartPlan, RunningPart, RunningTask, taskLabel } from './running-task';
import { SettlingHolds } from './settling-holds';

/**
 * Each worker's part of a running task: drain first where the plan says, send the frame, apply the
 * worker's `lifecycle_status` reports, time it out, fail it when the worker leaves; and once every
 * part has finished, the task's end (its audit row, its answer). Models held out of routing for a
 * part go back when the worker's model list can be trusted again (SettlingHolds).
 */
export class PartRunner {
  private readonly settling: SettlingHolds;

  constructor(
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly fleet: Fleet,
    private readonly book: LifecycleTaskBook,
    private readonly audit: AuditTrail,
    private readonly log: Logger,
  ) {
    this.settling = new SettlingHolds(
      (worker, models) => this.releaseHolds(worker, models),
      (worker) => fleet.requestModelsRefresh(worker, 'lifecycle'),
      clock,
      config.lifecycle.settleTimeoutMs,
      log,
    );
  }

  /** Starts every part still unfinished (drain, then send); a part that breaks fails alone. */
  start(rt: RunningTask, plans: ReadonlyArray<{ worker: WorkerSession; plan: PartPlan }>): void {
    for (const { worker, plan } of plans) {
      const rp = rt.parts.get(worker.id)!;
      // A worker that left while the row was written has failed its part already: nothing to send.
      if (partFinished(rp.part)) continue;
      this.run(rt, rp, plan).catch((e: unknown) => {
        this.log.error(`${rt.task.operation} (task ${rt.task.id}) on worker ${worker.id} broke: ${(e as Error).stack ?? e}`);
        this.finish(
          rt,
          rp,
          'failed',
          { error: 'internal_error: the gateway failed to relay the operation' },
          rp.part.sentAt !== undefined ? 'unknown' : 'release',
        );
      });
    }
  }

  // ---------------------------------------------------------------- worker reports

  /** A worker's `lifecycle_status` (already validated by the codec). Synchronous: memory only, writes go behind. */
  onStatus(worker: WorkerSession, msg: LifecycleStatusMessage): void {
    if (this.settling.onStatus(worker, msg.task_id, msg.status)) return;
    const rt = this.book.get(msg.task_id);
    const rp = rt?.parts.get(worker.id);
    if (!rt || !rp || rp.worker !== worker) {
      this.log.warn(`dropped lifecycle_status for task ${msg.task_id} from worker ${worker.id}: no such operation on this worker`);
      return;
    }
    const part = rp.part;
    if (partFinished(part) || part.status === 'draining') {
      this.log.warn(`dropped lifecycle_status ${msg.status} for task ${msg.task_id} from worker ${worker.id}: the operation is ${part.status}`);
      return;
    }
    if (msg.progress !== undefined) part.progress = msg.progress;
    if (msg.eta_secs !== undefined) part.etaSecs = msg.eta_secs;
    const figures = definedOnly({
      gpuMemoryUsedMB: msg.gpu_memory_used_mb,
      gpuMemoryFreedMB: msg.gpu_memory_freed_mb,
      entriesRemoved: msg.entries_removed,
      memoryFreedMB: msg.memory_freed_mb,
    });
    switch (msg.status) {
      case 'accepted':
      case 'loading': {
        const statusChanged = part.status !== msg.status;
        Object.assign(part, figures, { status: msg.status });
        rt.task.updatedAt = this.clock.now();
        this.book.changed(rt, statusChanged);
        return;
      }
      case 'completed': {
        const loadTimeMs = rt.task.operation === 'model-load' && part.sentAt !== undefined ? this.clock.now() - part.sentAt : undefined;
        return this.finish(rt, rp, 'completed', { ...figures, progress: 1, ...(loadTimeMs !== undefined ? { loadTimeMs } : {}) }, 'completed');
      }
      case 'failed':
        return this.finish(rt, rp, 'failed', { ...figures, error: `failed: ${msg.error ?? 'the worker gave no reason'}` });
      case 'unsupported':
        return this.finish(rt, rp, 'unsupported', { error: `unsupported: ${msg.error ?? "the worker's backend cannot do this"}` });
    }
  }

  /** The worker's connection is gone: its unfinished parts fail. */
  onWorkerGone(worker: WorkerSession): void {
    this.settling.forget(worker);
    for (const rt of this.book.all()) {
      const rp = rt.parts.get(worker.id);
      if (rp && rp.worker === worker && !partFinished(rp.part)) {
        this.finish(rt, rp, 'failed', { error: 'worker_disconnected: the worker disconnected before it finished' });
      }
    }
  }

  /** The worker sent `models_update`: holds waiting for its list may go. */
  onModelsChanged(worker: WorkerSession): void {
    this.settling.onModelsUpdate(worker);
  }

  // ---------------------------------------------------------------- one part

  private async run(rt: RunningTask, rp: RunningPart, plan: PartPlan): Promise<void> {
    if (plan.drain !== undefined) {
      this.settling.takeOver(rp.worker, plan.drain);
      const draining = drainModel(this.fleet, this.clock, this.config.lifecycle.unloadDrainTimeoutMs, rp, plan.drain);
      const drained = draining === true || (await draining);
      if (partFinished(rp.part)) return; // the worker left while its requests drained
      if (!drained) {
        const secs = Math.round(this.config.lifecycle.unloadDrainTimeoutMs / 1000);
        return this.finish(rt, rp, 'failed', {
          error: `drain_timeout: requests for '${plan.drain}' were still running after ${secs} s; nothing was sent and no request was cut`,
        });
      }
    }
    rp.part.status = 'sent';
    rp.part.sentAt = this.clock.now();
    rp.worker.channel.send(plan.frame);
    const timeoutMs = rt.task.operation === 'model-load' ? this.config.lifecycle.loadTimeoutMs : this.config.lifecycle.operationTimeoutMs;
    rp.timer = this.clock.setTimeout(() => {
      rp.timer = undefined;
      this.finish(rt, rp, 'failed', { error: `timeout: the worker did not finish within ${Math.round(timeoutMs / 1000)} s` }, 'unknown');
    }, timeoutMs);
    rt.task.updatedAt = this.clock.now();
    this.book.changed(rt, true);
  }

  private finish(
    rt: RunningTask,
    rp: RunningPart,
    status: Extract<PartStatus, 'completed' | 'failed' | 'unsupported'>,
    update: Partial<TaskPart>,
    holdsAfter: HoldsAfter = 'release',
  ): void {
    if (partFinished(rp.part)) return;
    if (rp.timer) this.clock.clearTimeout(rp.timer);
    rp.timer = undefined;
    rp.stopDrain?.();
    Object.assign(rp.part, update, { status });
    // Routing follows what the worker advertises again, once that can be trusted.
    if (holdsAfter === 'completed') this.settling.afterCompleted(rp.worker, rt.task.id, rp.holds);
    else if (holdsAfter === 'unknown') this.settling.afterTimeout(rp.worker, rt.task.id, rp.holds);
    else this.releaseHolds(rp.worker, rp.holds);
    this.book.releaseKeys(rt, rp);
    const now = this.clock.now();
    rt.task.updatedAt = now;
    if (rt.task.parts.every(partFinished)) this.finishTask(rt, now);
    else this.book.changed(rt, true);
  }

  /** Models back into routing on the worker, as far as it advertises them; its queued requests for them may go. */
  private releaseHolds(worker: WorkerSession, models: readonly string[]): void {
    if (models.length === 0) return;
    this.fleet.releaseHolds(worker, models);
  }

  private finishTask(rt: RunningTask, now: number): void {
    const { task } = rt;
    task.finishedAt = now;
    const status = taskStatus(task.parts);
    const error = status === 'failed' ? operationFailed(task) : undefined;
    this.audit.record(rt.audit.entry(now, status === 'completed' ? 'completed' : 'failed', status === 'completed' ? 200 : 502, error));
    const log = `${taskLabel(task)} (task ${task.id}) ${status}${error ? `: ${taskError(task.parts)}` : ''}`;
    if (error) this.log.warn(log);
    else this.log.log(log);
    // Unloads and flushes are answered now; a load stays in memory until its final state is written.
    if (task.operation !== 'model-load') this.book.forget(rt);
    this.book.changed(rt, true);
    rt.settle();
  }
}
