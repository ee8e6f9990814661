import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnModuleInit, Optional } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { APP_CONFIG, AppConfig } from '../config';
import { CLOCK, Clock, TimerHandle } from '../common/clock';
import { Errors, GatewayError } from '../common/gateway-error';
import { AuditTrail } from '../governance/audit-trail';
import { GovernanceService } from '../governance/governance.service';
import { LifecycleOperation } from '../governance/op-token';
import { OpTokenVerifier } from '../governance/op-token-verifier';
import { LifecycleCommandMessage, LifecycleStatusMessage } from '../protocol';
import { ProvidersService } from '../providers/providers.service';
import { WorkerSession } from '../fleet/worker-session';
import { Fleet } from '../fleet/fleet.service';
import { SerialWriteQueue } from '../common/serial-write-queue';
import { StaleCleanupService } from '../registry/stale-cleanup.service';
import type { LifecycleReportHandler } from '../worker-link/worker-connection';
import { AuditContext, definedOnly } from './audit-context';
import { flushRequest, loadRequest, unloadRequest } from './bound-request';
import { FlushCacheDto, LoadModelDto, UnloadModelDto } from './lifecycle.dto';
import { LifecycleTask, loadTaskView, partFinished, partView, PartStatus, TaskPart, taskError, taskStatus, total } from './lifecycle-task';
import { LoadingModel, LoadingModels } from './loading-models';
import { LoadTaskRecord, LoadTaskStore } from './load-task-store';
import { SettlingHolds } from './settling-holds';
import { flushKey, modelKey, TargetSelector } from './target-selection';

/** One worker's part while it runs. */
interface RunningPart {
  part: TaskPart;
  worker: WorkerSession;
  /** Conflict keys this part holds on its worker (see target-selection). */
  keys: string[];
  /** Models held out of routing on the worker for this part (see finishPart). */
  holds: string[];
  timer?: TimerHandle;
  /** Ends a drain that is still waiting (the part finished meanwhile). */
  stopDrain?: () => void;
}

interface RunningTask {
  task: LifecycleTask;
  parts: Map<string, RunningPart>;
  audit: AuditContext;
  /** Resolves once every part has finished. */
  settled: Promise<void>;
  settle: () => void;
  /** When a model load was last written (progress is written at most every PROGRESS_WRITE_MS). */
  persistedAt: number;
}

/** What to send one worker, and what to drain on it first. */
interface PartPlan {
  frame: LifecycleCommandMessage;
  keys: string[];
  /** A model to take out of routing and let drain before sending (unload; a load's evicted model). */
  drain?: string;
}

/**
 * What becomes of a finished part's holds: released at once (nothing was sent, or the worker said
 * it failed: it still serves the model), or kept until the worker's model list can be trusted
 * (it completed; or nobody knows how it ended: see SettlingHolds).
 */
type HoldsAfter = 'release' | 'completed' | 'unknown';

const PROGRESS_WRITE_MS = 5000;
const RESTARTED = 'gateway_restarted: the gateway restarted during the load; the worker may still have finished it (see /v1/capabilities)';

/**
 * Relays governed lifecycle operations to workers that negotiated `model_lifecycle`: `model_load`
 * (a task polled by `GET /v1/models/load/:taskId`), `model_unload` and `cache_flush` (answered
 * when every worker has). An unload first takes the model out of routing on the worker and waits
 * for its in-flight requests, so none is cut. Worker reports (`lifecycle_status`) are applied in
 * memory; model loads are written behind to the database.
 */
@Injectable()
export class LifecycleService extends LoadingModels implements LifecycleReportHandler, OnModuleInit, BeforeApplicationShutdown {
  private readonly log = new Logger('Lifecycle');
  private readonly tasks = new Map<string, RunningTask>();
  /** `<worker id>\0<conflict key>` → id of the task holding it. */
  private readonly running = new Map<string, string>();
  private readonly writes = new SerialWriteQueue(this.log);
  private readonly selector: TargetSelector;
  private readonly listeners: Array<() => void> = [];
  private readonly settling: SettlingHolds;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(CLOCK) private readonly clock: Clock,
    private readonly fleet: Fleet,
    providers: ProvidersService,
    private readonly governance: GovernanceService,
    private readonly audit: AuditTrail,
    private readonly store: LoadTaskStore,
    @Optional() cleanup?: StaleCleanupService,
  ) {
    super();
    this.selector = new TargetSelector(fleet.sessions, providers);
    this.settling = new SettlingHolds(
      (worker, models) => this.releaseHolds(worker, models),
      (worker) => fleet.requestModelsRefresh(worker, 'lifecycle'),
      clock,
      config.lifecycle.settleTimeoutMs,
      this.log,
    );
    fleet.on('workerGone', ({ worker }) => this.onWorkerGone(worker));
    fleet.on('modelsChanged', ({ worker }) => this.settling.onModelsUpdate(worker));
    cleanup?.addRetentionTask('lifecycle_tasks', (now) => this.prune(now));
  }

  /** Loads this gateway instance left unfinished when it stopped cannot be followed any more: they fail. */
  async onModuleInit(): Promise<void> {
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

  async beforeApplicationShutdown(): Promise<void> {
    await this.writes.whenIdle();
  }

  // ---------------------------------------------------------------- operations

  /** 403 `lifecycle_disabled` unless VERIFIED_OP_TOKEN_KEY_PATH is set. */
  requireEnabled(): void {
    if (!this.governance.enabled) throw Errors.lifecycleDisabled();
  }

  /** `POST /v1/models/load`: verified, targets chosen, `model_load` sent (after draining `evictModel`); answers the task. */
  async load(body: LoadModelDto, audit: AuditContext) {
    audit.modelId = body.modelId;
    audit.target = definedOnly({ pool: body.pool, workerId: body.workerId, replicas: body.replicas, evictModel: body.evictModel });
    audit.claimed(OpTokenVerifier.peek(body.verifiedOpToken));
    await this.governance.verify(body.verifiedOpToken, loadRequest(body));
    const { modelId, evictModel } = body;
    const workers = this.selector.forLoad(
      { pool: body.pool, workerId: body.workerId, modelId, replicas: body.replicas ?? 1, gpuMemoryBudgetMB: body.gpuMemoryBudgetMB, evictModel },
      this.runningTaskOf,
    );
    const options = definedOnly({ quantization: body.quantization, maxContextLength: body.maxContextLength, gpuMemoryBudgetMB: body.gpuMemoryBudgetMB, evictModel });
    const rt = await this.launch('model-load', { modelId, options }, workers, audit, (taskId, w) => ({
      keys: evictModel ? [modelKey(modelId), modelKey(evictModel)] : [modelKey(modelId)],
      // Whether or not the worker lists it (a `*` worker does not): its requests for it in flight finish first.
      drain: evictModel,
      frame: {
        type: 'model_load',
        task_id: taskId,
        model_id: modelId,
        quantization: body.quantization,
        max_context_length: body.maxContextLength,
        gpu_memory_budget_mb: body.gpuMemoryBudgetMB,
        evict_model: evictModel,
        verified_op_token: body.verifiedOpToken as string,
      },
    }));
    return loadTaskView(rt.task);
  }

  /** `POST /v1/models/unload`: on each worker serving it, the model leaves routing, drains, then `model_unload`. */
  async unload(body: UnloadModelDto, audit: AuditContext) {
    audit.modelId = body.modelId;
    audit.target = definedOnly({ pool: body.pool, workerId: body.workerId });
    audit.claimed(OpTokenVerifier.peek(body.verifiedOpToken));
    await this.governance.verify(body.verifiedOpToken, unloadRequest(body));
    const { modelId } = body;
    const workers = this.selector.forUnload({ pool: body.pool, workerId: body.workerId, modelId }, this.runningTaskOf);
    const rt = await this.launch('model-unload', { modelId }, workers, audit, (taskId) => ({
      keys: [modelKey(modelId)],
      drain: modelId,
      frame: { type: 'model_unload', task_id: taskId, model_id: modelId, verified_op_token: body.verifiedOpToken as string },
    }));
    await rt.settled;
    const parts = rt.task.parts;
    if (taskStatus(parts) !== 'completed') throw this.failed(rt);
    const freed = total(parts, 'gpuMemoryFreedMB');
    return { modelId, workers: parts.map(partView), ...(freed !== undefined ? { gpuMemoryFreedMB: freed } : {}), kvCacheFlushed: true };
  }

  /** `POST /v1/cache/flush`: `cache_flush` to every target worker; answers the totals once all have. */
  async flush(body: FlushCacheDto, audit: AuditContext) {
    audit.modelId = body.modelId ?? null;
    audit.scope = body.scope;
    audit.target = definedOnly({ pool: body.pool, workerId: body.workerId, tenantId: body.tenantId, tag: body.tag });
    audit.claimed(OpTokenVerifier.peek(body.verifiedOpToken));
    const { scope, modelId, tenantId, tag } = body;
    await this.governance.verify(body.verifiedOpToken, flushRequest(body));
    const key = flushKey(scope, modelId ?? tenantId ?? tag);
    const workers = this.selector.forFlush({ pool: body.pool, workerId: body.workerId, key, modelId }, this.runningTaskOf);
    const rt = await this.launch('cache-flush', { modelId, scope, tenantId, tag }, workers, audit, (taskId) => ({
      keys: [key],
      frame: definedOnly({ type: 'cache_flush' as const, task_id: taskId, scope, model_id: modelId, tenant_id: tenantId, tag, verified_op_token: body.verifiedOpToken as string }),
    }));
    await rt.settled;
    const parts = rt.task.parts;
    if (taskStatus(parts) !== 'completed') throw this.failed(rt);
    const entries = total(parts, 'entriesRemoved');
    const freed = total(parts, 'memoryFreedMB');
    return {
      flushed: true,
      ...(entries !== undefined ? { entriesRemoved: entries } : {}),
      ...(freed !== undefined ? { memoryFreedMB: freed } : {}),
      workers: parts.map(partView),
    };
  }

  /** `GET /v1/models/load/:taskId`: from memory while it runs, else from the database. */
  async loadTask(taskId: string) {
    const rt = this.tasks.get(taskId);
    if (rt?.task.operation === 'model-load') return loadTaskView(rt.task);
    const record = await this.store.get(taskId);
    if (!record) throw Errors.notFound('Load task', taskId);
    return loadTaskView({ id: record.id, modelId: record.modelId, parts: record.parts });
  }

  // ---------------------------------------------------------------- worker reports

  /** A worker's `lifecycle_status` (already validated by the codec). Synchronous: memory only, writes go behind. */
  onLifecycleStatus(worker: WorkerSession, msg: LifecycleStatusMessage): void {
    if (this.settling.onStatus(worker, msg.task_id, msg.status)) return;
    const rt = this.tasks.get(msg.task_id);
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
        this.changed(rt, statusChanged);
        return;
      }
      case 'completed': {
        const loadTimeMs = rt.task.operation === 'model-load' && part.sentAt !== undefined ? this.clock.now() - part.sentAt : undefined;
        return this.finishPart(rt, rp, 'completed', { ...figures, progress: 1, ...(loadTimeMs !== undefined ? { loadTimeMs } : {}) }, 'completed');
      }
      case 'failed':
        return this.finishPart(rt, rp, 'failed', { ...figures, error: `failed: ${msg.error ?? 'the worker gave no reason'}` });
      case 'unsupported':
        return this.finishPart(rt, rp, 'unsupported', { error: `unsupported: ${msg.error ?? "the worker's backend cannot do this"}` });
    }
  }

  /** The worker's connection is gone: its unfinished parts fail. */
  private onWorkerGone(worker: WorkerSession): void {
    this.settling.forget(worker);
    for (const rt of [...this.tasks.values()]) {
      const rp = rt.parts.get(worker.id);
      if (rp && rp.worker === worker && !partFinished(rp.part)) {
        this.finishPart(rt, rp, 'failed', { error: 'worker_disconnected: the worker disconnected before it finished' });
      }
    }
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

  // ---------------------------------------------------------------- running tasks

  /** The task holding `key` on `worker`, if one runs. */
  private readonly runningTaskOf = (worker: WorkerSession, key: string): string | undefined => this.running.get(`${worker.id}\u0000${key}`);

  /**
   * Creates the task, records its acceptance durably, and only then starts every worker's part
   * (drain, then send). The task's conflict keys are taken before the write, so a concurrent
   * request for the same target meets a 409 rather than a race; when the row cannot be written
   * they are given back and nothing reaches a worker (503 audit_unavailable).
   */
  private async launch(
    operation: LifecycleOperation,
    what: Pick<LifecycleTask, 'modelId' | 'scope' | 'tenantId' | 'tag'> & { options?: LifecycleTask['options'] },
    workers: WorkerSession[],
    audit: AuditContext,
    plan: (taskId: string, worker: WorkerSession) => PartPlan,
  ): Promise<RunningTask> {
    const now = this.clock.now();
    const id = `${operation === 'model-load' ? 'load' : operation === 'model-unload' ? 'unload' : 'flush'}-${randomUUID()}`;
    const { options, ...target } = what;
    const task: LifecycleTask = { id, operation, ...definedOnly(target), options: options ?? {}, parts: [], createdAt: now, updatedAt: now };
    let settle!: () => void;
    const settled = new Promise<void>((resolve) => (settle = resolve));
    const rt: RunningTask = { task, parts: new Map(), audit, settled, settle, persistedAt: 0 };
    const plans = workers.map((worker) => ({ worker, plan: plan(id, worker) }));
    for (const { worker, plan: p } of plans) {
      const part: TaskPart = { workerId: worker.id, name: worker.name, pool: worker.provider, status: p.drain ? 'draining' : 'sent', progress: 0 };
      task.parts.push(part);
      rt.parts.set(worker.id, { part, worker, keys: p.keys, holds: [] });
      for (const key of p.keys) this.running.set(`${worker.id}\u0000${key}`, id);
    }
    this.tasks.set(id, rt);
    audit.taskId = id;
    audit.workers = workers.map((w) => w.id);
    // 202: sent on its way; the row of its end carries the answer (200, or 502 lifecycle_failed).
    try {
      await this.audit.recordDurably(audit.entry(now, 'accepted', 202));
    } catch (e) {
      this.abandon(rt);
      audit.workers = [];
      audit.taskId = null;
      this.log.error(`${operation}${task.modelId ? ` of '${task.modelId}'` : ''} refused, nothing sent: its audit row could not be written: ${(e as Error).message}`);
      throw Errors.auditUnavailable();
    }
    audit.recorded = true;
    this.log.log(`${operation}${task.modelId ? ` of '${task.modelId}'` : ''} (task ${id}) sent to ${workers.map((w) => w.name).join(', ')}; signed by ${audit.signers?.join(', ')}`);
    for (const { worker, plan: p } of plans) {
      const rp = rt.parts.get(worker.id)!;
      // A worker that left while the row was written has failed its part already: nothing to send.
      if (partFinished(rp.part)) continue;
      this.runPart(rt, rp, p).catch((e: unknown) => {
        this.log.error(`${operation} (task ${id}) on worker ${worker.id} broke: ${(e as Error).stack ?? e}`);
        this.finishPart(rt, rp, 'failed', { error: 'internal_error: the gateway failed to relay the operation' }, rp.part.sentAt !== undefined ? 'unknown' : 'release');
      });
    }
    this.changed(rt, true);
    return rt;
  }

  /** A task whose acceptance could not be recorded: forgotten before any part ran. */
  private abandon(rt: RunningTask): void {
    for (const rp of rt.parts.values()) {
      for (const key of rp.keys) {
        const runKey = `${rp.worker.id}\u0000${key}`;
        if (this.running.get(runKey) === rt.task.id) this.running.delete(runKey);
      }
    }
    this.tasks.delete(rt.task.id);
  }

  private async runPart(rt: RunningTask, rp: RunningPart, plan: PartPlan): Promise<void> {
    if (plan.drain !== undefined) {
      const draining = this.drain(rp, plan.drain);
      const drained = draining === true || (await draining);
      if (partFinished(rp.part)) return; // the worker left while its requests drained
      if (!drained) {
        const secs = Math.round(this.config.lifecycle.unloadDrainTimeoutMs / 1000);
        return this.finishPart(rt, rp, 'failed', {
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
      this.finishPart(rt, rp, 'failed', { error: `timeout: the worker did not finish within ${Math.round(timeoutMs / 1000)} s` }, 'unknown');
    }, timeoutMs);
    rt.task.updatedAt = this.clock.now();
    this.changed(rt, true);
  }

  /**
   * Takes `model` out of routing on the part's worker; true at once when none of its requests for
   * it is in flight, else resolves true once none is, or false at the drain deadline (or when the
   * part ends meanwhile).
   */
  private drain(rp: RunningPart, model: string): true | Promise<boolean> {
    const { worker } = rp;
    this.settling.takeOver(worker, model);
    this.fleet.holdOut(worker, model);
    rp.holds.push(model);
    if (this.fleet.inFlightFor(worker, model) === 0) return true;
    return new Promise((resolve) => {
      let done = false;
      const finish = (drained: boolean) => {
        if (done) return;
        done = true;
        stopWatching();
        this.clock.clearTimeout(timer);
        rp.stopDrain = undefined;
        resolve(drained);
      };
      const stopWatching = this.fleet.watchReleases(worker, () => {
        if (this.fleet.inFlightFor(worker, model) === 0) finish(true);
      });
      const timer = this.clock.setTimeout(() => finish(false), this.config.lifecycle.unloadDrainTimeoutMs);
      rp.stopDrain = () => finish(false);
    });
  }

  private finishPart(
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
    for (const key of rp.keys) {
      const runKey = `${rp.worker.id}\u0000${key}`;
      if (this.running.get(runKey) === rt.task.id) this.running.delete(runKey);
    }
    const now = this.clock.now();
    rt.task.updatedAt = now;
    if (rt.task.parts.every(partFinished)) this.finishTask(rt, now);
    else this.changed(rt, true);
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
    const error = status === 'failed' ? this.failed(rt) : undefined;
    this.audit.record(rt.audit.entry(now, status === 'completed' ? 'completed' : 'failed', status === 'completed' ? 200 : 502, error));
    const log = `${task.operation}${task.modelId ? ` of '${task.modelId}'` : ''} (task ${task.id}) ${status}${error ? `: ${taskError(task.parts)}` : ''}`;
    if (error) this.log.warn(log);
    else this.log.log(log);
    // Unloads and flushes are answered now; a load stays in memory until its final state is written.
    if (task.operation !== 'model-load') this.tasks.delete(task.id);
    this.changed(rt, true);
    rt.settle();
  }

  /** The error an operation that did not complete everywhere answers with. */
  private failed(rt: RunningTask): GatewayError {
    const { task } = rt;
    const bad = task.parts.filter((p) => p.status !== 'completed').length;
    const what = `${task.operation}${task.modelId ? ` of '${task.modelId}'` : task.scope ? ` (scope ${task.scope})` : ''}`;
    return Errors.lifecycleFailed(`${what} did not complete on ${bad} of ${task.parts.length} worker(s): ${taskError(task.parts) ?? 'no reason given'}`.slice(0, 1000), task.parts.map(partView));
  }

  /** A task moved: listeners hear of it, and a model load is written (progress alone at most every 5 s). */
  private changed(rt: RunningTask, significant: boolean): void {
    for (const listener of this.listeners) listener();
    if (rt.task.operation !== 'model-load') return;
    const now = this.clock.now();
    if (!significant && now - rt.persistedAt < PROGRESS_WRITE_MS) return;
    rt.persistedAt = now;
    const record = this.recordOf(rt.task);
    const finished = rt.task.finishedAt !== undefined;
    this.writes.enqueue(`model load ${rt.task.id}`, async () => {
      await this.store.save(record);
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

  /** Retention: model loads last changed before the cutoff are deleted. */
  private async prune(now: number): Promise<number> {
    const cutoff = now - this.config.lifecycle.taskRetentionMs;
    for (const [id, rt] of this.tasks) if (rt.task.finishedAt !== undefined && rt.task.finishedAt < cutoff) this.tasks.delete(id);
    return this.store.deleteUpdatedBefore(cutoff);
  }
}
