import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnModuleInit, Optional } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { APP_CONFIG, AppConfig } from '../config';
import { CLOCK, Clock } from '../common/clock';
import { Errors } from '../common/gateway-error';
import { AuditTrail } from '../governance/audit-trail';
import { GovernanceService } from '../governance/governance.service';
import { LifecycleOperation } from '../governance/op-token';
import { OpTokenVerifier } from '../governance/op-token-verifier';
import { LifecycleStatusMessage } from '../protocol';
import { ProvidersService } from '../providers/providers.service';
import { WorkerSession } from '../fleet/worker-session';
import { Fleet } from '../fleet/fleet.service';
import { StaleCleanupService } from '../registry/stale-cleanup.service';
import type { LifecycleReportHandler } from './lifecycle-report-handler';
import { AuditContext, definedOnly } from './audit-context';
import { flushRequest, loadRequest, unloadRequest } from './bound-request';
import { FlushCacheDto, LoadModelDto, UnloadModelDto } from './lifecycle.dto';
import { LifecycleTask, loadTaskView, partView, TaskPart, taskStatus, total } from './lifecycle-task';
import { LifecycleTaskBook } from './lifecycle-task-book';
import { LoadingModel, LoadingModels } from './loading-models';
import { LoadTaskStore } from './load-task-store';
import { PartRunner } from './part-runner';
import { operationFailed, PartPlan, RunningTask, taskLabel } from './running-task';
import { flushKey, modelKey, TargetSelector } from './target-selection';

/**
 * Relays governed lifecycle operations to workers that negotiated `model_lifecycle`: `model_load`
 * (a task polled by `GET /v1/models/load/:taskId`), `model_unload` and `cache_flush` (answered
 * when every worker has). An unload first takes the model out of routing on the worker and waits
 * for its in-flight requests, so none is cut. Worker reports (`lifecycle_status`) are applied in
 * memory; model loads are written behind to the database.
 *
 * This class verifies, picks the targets and records the acceptance; the tasks and their writes
 * are kept by LifecycleTaskBook, each worker's part is run by PartRunner.
 */
@Injectable()
export class LifecycleService extends LoadingModels implements LifecycleReportHandler, OnModuleInit, BeforeApplicationShutdown {
  private readonly log = new Logger('Lifecycle');
  private readonly selector: TargetSelector;
  private readonly book: LifecycleTaskBook;
  private readonly parts: PartRunner;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    @Inject(CLOCK) private readonly clock: Clock,
    fleet: Fleet,
    providers: ProvidersService,
    private readonly governance: GovernanceService,
    private readonly audit: AuditTrail,
    store: LoadTaskStore,
    @Optional() cleanup?: StaleCleanupService,
  ) {
    super();
    this.selector = new TargetSelector(fleet.sessions, providers);
    this.book = new LifecycleTaskBook(config, clock, store, this.log);
    this.parts = new PartRunner(config, clock, fleet, this.book, audit, this.log);
    fleet.on('workerGone', ({ worker }) => this.parts.onWorkerGone(worker));
    fleet.on('modelsChanged', ({ worker }) => this.parts.onModelsChanged(worker));
    cleanup?.addRetentionTask('lifecycle_tasks', (now) => this.book.prune(now));
  }

  /** Loads this gateway instance left unfinished when it stopped cannot be followed any more: they fail. */
  async onModuleInit(): Promise<void> {
    await this.book.closeLeftovers();
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.book.flushProgress();
    await this.book.whenIdle();
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
      this.book.runningTaskOf,
    );
    const options = definedOnly({
      quantization: body.quantization,
      maxContextLength: body.maxContextLength,
      gpuMemoryBudgetMB: body.gpuMemoryBudgetMB,
      evictModel,
    });
    const rt = await this.launch('model-load', { modelId, options }, workers, audit, (taskId) => ({
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
    const workers = this.selector.forUnload({ pool: body.pool, workerId: body.workerId, modelId }, this.book.runningTaskOf);
    const rt = await this.launch('model-unload', { modelId }, workers, audit, (taskId) => ({
      keys: [modelKey(modelId)],
      drain: modelId,
      frame: { type: 'model_unload', task_id: taskId, model_id: modelId, verified_op_token: body.verifiedOpToken as string },
    }));
    await rt.settled;
    const parts = rt.task.parts;
    if (taskStatus(parts) !== 'completed') throw operationFailed(rt.task);
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
    const workers = this.selector.forFlush({ pool: body.pool, workerId: body.workerId, key, modelId }, this.book.runningTaskOf);
    const rt = await this.launch('cache-flush', { modelId, scope, tenantId, tag }, workers, audit, (taskId) => ({
      keys: [key],
      frame: definedOnly({
        type: 'cache_flush' as const,
        task_id: taskId,
        scope,
        model_id: modelId,
        tenant_id: tenantId,
        tag,
        verified_op_token: body.verifiedOpToken as string,
      }),
    }));
    await rt.settled;
    const parts = rt.task.parts;
    if (taskStatus(parts) !== 'completed') throw operationFailed(rt.task);
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
    const rt = this.book.get(taskId);
    if (rt?.task.operation === 'model-load') return loadTaskView(rt.task);
    const record = await this.book.stored(taskId);
    if (!record) throw Errors.notFound('Load task', taskId);
    return loadTaskView({ id: record.id, modelId: record.modelId, parts: record.parts });
  }

  // ---------------------------------------------------------------- worker reports

  /** A worker's `lifecycle_status` (already validated by the codec). Synchronous: memory only, writes go behind. */
  onLifecycleStatus(worker: WorkerSession, msg: LifecycleStatusMessage): void {
    this.parts.onStatus(worker, msg);
  }

  // ---------------------------------------------------------------- capabilities

  loadingIn(pool: string): LoadingModel[] {
    return this.book.loadingIn(pool);
  }

  onChange(listener: () => void): void {
    this.book.onChange(listener);
  }

  // ---------------------------------------------------------------- running tasks

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
    }
    this.book.add(rt);
    audit.taskId = id;
    audit.workers = workers.map((w) => w.id);
    // 202: sent on its way; the row of its end carries the answer (200, or 502 lifecycle_failed).
    try {
      await this.audit.recordDurably(audit.entry(now, 'accepted', 202));
    } catch (e) {
      this.book.abandon(rt);
      audit.workers = [];
      audit.taskId = null;
      this.log.error(`${taskLabel(task)} refused, nothing sent: its audit row could not be written: ${(e as Error).message}`);
      throw Errors.auditUnavailable();
    }
    audit.recorded = true;
    this.log.log(`${taskLabel(task)} (task ${id}) sent to ${workers.map((w) => w.name).join(', ')}; signed by ${audit.signers?.join(', ')}`);
    this.parts.start(rt, plans);
    this.book.changed(rt, true);
    return rt;
  }
}
