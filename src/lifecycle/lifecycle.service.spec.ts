import { FakeClock } from '../../test/support/fake-clock';
import { MemoryProviderStore, NoWorkerRecords, RecordingChannel, workerSession } from '../../test/support/dispatch-harness';
import { AppConfig, loadConfig } from '../config';
import { GatewayError } from '../common/gateway-error';
import { AuditEntry, AuditLog, AuditRecord } from '../governance/audit-log';
import { AuditTrail } from '../governance/audit-trail';
import { GovernanceService } from '../governance/governance.service';
import { Fleet } from '../fleet/fleet.service';
import { WorkerSession } from '../fleet/worker-session';
import { servesModel } from '../fleet/worker-snapshot';
import { LifecycleState } from '../observability/lifecycle-state';
import { MetricsService } from '../observability/metrics.service';
import { LifecycleStatusMessage, ServerToWorkerMessage } from '../protocol';
import { ProvidersService } from '../providers/providers.service';
import { AuditContext } from './audit-context';
import { LifecycleService } from './lifecycle.service';
import { LoadTaskRecord, LoadTaskStore } from './load-task-store';

class MemoryAuditLog extends AuditLog {
  rows: AuditEntry[] = [];
  /** The next append fails (the database is down). */
  failNext = false;
  async append(entry: AuditEntry): Promise<void> {
    if (this.failNext) {
      this.failNext = false;
      throw new Error('database unreachable');
    }
    this.rows.push(entry);
  }
  async list(): Promise<AuditRecord[]> {
    return [];
  }
  async deleteBefore(): Promise<number> {
    return 0;
  }
}

class MemoryLoadTaskStore extends LoadTaskStore {
  readonly rows = new Map<string, LoadTaskRecord>();
  async save(task: LoadTaskRecord): Promise<void> {
    this.rows.set(task.id, structuredClone(task));
  }
  async get(id: string): Promise<LoadTaskRecord | undefined> {
    return this.rows.get(id);
  }
  async unfinished(instance: string): Promise<LoadTaskRecord[]> {
    return [...this.rows.values()].filter((r) => r.gatewayInstanceId === instance && r.status === 'loading');
  }
  async deleteUpdatedBefore(): Promise<number> {
    return 0;
  }
}

const LIFECYCLE_FRAMES = new Set(['model_load', 'model_unload', 'cache_flush']);
const TOKEN = 'signed-token';

/** The error `answer` rejects with (a test fails if it resolves). */
const failureOf = (answer: Promise<unknown>): Promise<GatewayError> =>
  answer.then(
    () => {
      throw new Error('expected the operation to fail');
    },
    (e: GatewayError) => e,
  );

/** Lets queued promise callbacks (the audit write, a drain's end) run. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('LifecycleService (fake clock, real Fleet)', () => {
  let clock: FakeClock;
  let config: AppConfig;
  let fleet: Fleet;
  let auditLog: MemoryAuditLog;
  let store: MemoryLoadTaskStore;
  let service: LifecycleService;

  beforeEach(async () => {
    clock = new FakeClock();
    config = loadConfig({
      PROVIDER_NAME: 'local',
      LIFECYCLE_UNLOAD_DRAIN_TIMEOUT_SECS: '30',
      LIFECYCLE_OPERATION_TIMEOUT_SECS: '60',
      LIFECYCLE_LOAD_TIMEOUT_SECS: '600',
      LIFECYCLE_SETTLE_TIMEOUT_SECS: '120',
    });
    const providers = new ProvidersService(config, new MemoryProviderStore());
    await providers.onModuleInit();
    fleet = new Fleet(config, clock, new NoWorkerRecords(), new MetricsService(), new LifecycleState());
    auditLog = new MemoryAuditLog();
    store = new MemoryLoadTaskStore();
    const governance = { enabled: true, verify: async () => ({}) } as unknown as GovernanceService;
    service = new LifecycleService(config, clock, fleet, providers, governance, new AuditTrail(auditLog, clock), store);
  });

  let seq = 0;
  function addWorker(models: string[], lifecycle = true): { worker: WorkerSession; channel: RecordingChannel } {
    const channel = new RecordingChannel();
    const id = `w-${++seq}`;
    const worker = workerSession(id, 'local', `name-${id}`, models, 4, '127.0.0.1', clock.now(), channel);
    if (lifecycle) worker.features = new Set(['model_lifecycle']);
    fleet.attach(worker);
    return { worker, channel };
  }

  const sentOps = (channel: RecordingChannel) => channel.sent.filter((m) => LIFECYCLE_FRAMES.has(m.type)) as Array<ServerToWorkerMessage & { task_id: string }>;
  const audit = (op: 'model-load' | 'model-unload' | 'cache-flush') => new AuditContext(op, 'sha256:admin');
  const status = (task_id: string, s: LifecycleStatusMessage['status'], extra: Partial<LifecycleStatusMessage> = {}): LifecycleStatusMessage => ({
    type: 'lifecycle_status',
    task_id,
    status: s,
    ...extra,
  });
  const routable = (worker: WorkerSession, model: string) => servesModel(fleet.directory.get(worker.id)!, model);

  describe('targeting', () => {
    it('a load goes to one worker that negotiated model_lifecycle, and its task follows the reports', async () => {
      const old = addWorker(['m'], false);
      const w = addWorker(['m']);
      const view = await service.load({ modelId: 'big', verifiedOpToken: TOKEN, quantization: 'q4' }, audit('model-load'));
      expect(view).toMatchObject({ status: 'loading', modelId: 'big', workers: [{ workerId: w.worker.id, status: 'sent' }] });
      expect(sentOps(old.channel)).toEqual([]);
      expect(sentOps(w.channel)).toEqual([{ type: 'model_load', task_id: view.taskId, model_id: 'big', quantization: 'q4', verified_op_token: TOKEN }]);
      expect(view.taskId).toMatch(/^load-/);

      clock.advance(2000);
      service.onLifecycleStatus(w.worker, status(view.taskId, 'loading', { progress: 0.5, eta_secs: 10 }));
      expect(await service.loadTask(view.taskId)).toMatchObject({ status: 'loading', progress: 0.5, eta: 10 });
      expect(service.loadingIn('local')).toEqual([{ id: 'big', progress: 0.5, eta: 10 }]);

      clock.advance(3000);
      service.onLifecycleStatus(w.worker, status(view.taskId, 'completed', { gpu_memory_used_mb: 4000 }));
      expect(await service.loadTask(view.taskId)).toMatchObject({ status: 'completed', progress: 1, loadTimeMs: 5000, gpuMemoryUsedMB: 4000 });
      expect(service.loadingIn('local')).toEqual([]);
      await service.beforeApplicationShutdown();
      expect(store.rows.get(view.taskId)).toMatchObject({ status: 'completed', modelId: 'big', gatewayInstanceId: config.instanceId });
      expect(auditLog.rows.map((r) => [r.outcome, r.status])).toEqual([
        ['accepted', 202],
        ['completed', 200],
      ]);
    });

    it('a load naming a worker goes to that worker only; a second load of the model there is a 409 naming the task', async () => {
      addWorker(['m']);
      const b = addWorker(['m']);
      const view = await service.load({ modelId: 'm', workerId: b.worker.id, verifiedOpToken: TOKEN }, audit('model-load'));
      expect(view.workers.map((p) => p.workerId)).toEqual([b.worker.id]);
      const again = service.load({ modelId: 'm', workerId: b.worker.id, verifiedOpToken: TOKEN }, audit('model-load'));
      await expect(again).rejects.toMatchObject({ code: 'conflict', details: { fields: { task_id: view.taskId } } });
    });

    it('an unload goes to every worker serving the model and answers once all have', async () => {
      const a = addWorker(['m', 'n']);
      const b = addWorker(['m']);
      const other = addWorker(['n']);
      const answer = service.unload({ modelId: 'm', verifiedOpToken: TOKEN }, audit('model-unload'));
      await settle();
      const [frameA] = sentOps(a.channel);
      expect(frameA).toMatchObject({ type: 'model_unload', model_id: 'm' });
      expect(sentOps(b.channel)).toEqual([{ ...frameA }]);
      expect(sentOps(other.channel)).toEqual([]);
      service.onLifecycleStatus(a.worker, status(frameA.task_id, 'completed', { gpu_memory_freed_mb: 100 }));
      service.onLifecycleStatus(b.worker, status(frameA.task_id, 'completed', { gpu_memory_freed_mb: 50 }));
      await expect(answer).resolves.toMatchObject({ modelId: 'm', gpuMemoryFreedMB: 150, kvCacheFlushed: true });
    });

    it('a flush of one model goes to the workers serving it; the totals are summed', async () => {
      const a = addWorker(['m']);
      const b = addWorker(['n']);
      const answer = service.flush({ scope: 'model', modelId: 'm', verifiedOpToken: TOKEN }, audit('cache-flush'));
      await settle();
      expect(sentOps(b.channel)).toEqual([]);
      const [frame] = sentOps(a.channel);
      expect(frame).toEqual({ type: 'cache_flush', task_id: frame.task_id, scope: 'model', model_id: 'm', verified_op_token: TOKEN });
      service.onLifecycleStatus(a.worker, status(frame.task_id, 'completed', { entries_removed: 7, memory_freed_mb: 12 }));
      await expect(answer).resolves.toMatchObject({ flushed: true, entriesRemoved: 7, memoryFreedMB: 12 });
    });

    it('nothing is sent when the accepted row cannot be written (503), and the target is free again', async () => {
      const w = addWorker(['m']);
      auditLog.failNext = true;
      await expect(service.load({ modelId: 'm', verifiedOpToken: TOKEN }, audit('model-load'))).rejects.toMatchObject({ code: 'audit_unavailable' });
      expect(sentOps(w.channel)).toEqual([]);
      await expect(service.load({ modelId: 'm', verifiedOpToken: TOKEN }, audit('model-load'))).resolves.toMatchObject({ status: 'loading' });
    });
  });

  describe('unload drain', () => {
    it('holds the model out of routing and sends model_unload only once its in-flight request is done', async () => {
      const w = addWorker(['m']);
      const lease = fleet.reserve(fleet.directory.get(w.worker.id)!, 'r-1', 'm')!;
      const answer = service.unload({ modelId: 'm', verifiedOpToken: TOKEN }, audit('model-unload'));
      await settle();
      expect(sentOps(w.channel)).toEqual([]);
      expect(routable(w.worker, 'm')).toBe(false);

      clock.advance(10_000);
      lease.release();
      await settle();
      const [frame] = sentOps(w.channel);
      expect(frame).toMatchObject({ type: 'model_unload', model_id: 'm' });
      // The worker dropped the model before it answered: the hold goes at once.
      fleet.onModelsChanged(w.worker, { models: [] });
      service.onLifecycleStatus(w.worker, status(frame.task_id, 'completed'));
      await expect(answer).resolves.toMatchObject({ modelId: 'm', workers: [{ workerId: w.worker.id, status: 'completed' }] });
    });

    it('fails with drain_timeout, sends nothing and routes the model again when requests outlast the drain', async () => {
      const w = addWorker(['m']);
      fleet.reserve(fleet.directory.get(w.worker.id)!, 'r-1', 'm');
      const answer = service.unload({ modelId: 'm', verifiedOpToken: TOKEN }, audit('model-unload'));
      const failure = failureOf(answer);
      await settle();
      await clock.advanceAsync(30_000);
      const error = await failure;
      expect(error).toMatchObject({ code: 'lifecycle_failed' });
      expect(error.message).toContain('drain_timeout');
      expect(sentOps(w.channel)).toEqual([]);
      expect(routable(w.worker, 'm')).toBe(true);
    });
  });

  describe('a worker leaving', () => {
    it('fails its part of a running load with worker_disconnected', async () => {
      const w = addWorker(['m']);
      const view = await service.load({ modelId: 'big', verifiedOpToken: TOKEN }, audit('model-load'));
      fleet.detach(w.worker);
      const task = await service.loadTask(view.taskId);
      expect(task).toMatchObject({ status: 'failed', workers: [{ status: 'failed' }] });
      expect(task.workers[0].error).toMatch(/^worker_disconnected: /);
      await settle();
      expect(auditLog.rows.map((r) => r.outcome)).toEqual(['accepted', 'failed']);
    });

    it('fails an unload still draining on it; nothing is sent', async () => {
      const w = addWorker(['m']);
      fleet.reserve(fleet.directory.get(w.worker.id)!, 'r-1', 'm');
      const answer = service.unload({ modelId: 'm', verifiedOpToken: TOKEN }, audit('model-unload'));
      const failure = failureOf(answer);
      await settle();
      fleet.detach(w.worker);
      const error = await failure;
      expect(error).toMatchObject({ code: 'lifecycle_failed' });
      expect(error.message).toContain('worker_disconnected');
      expect(sentOps(w.channel)).toEqual([]);
    });
  });

  describe('lifecycle_status', () => {
    it('applies accepted, loading and failed from the worker doing the part; ignores other workers and unknown tasks', async () => {
      const w = addWorker(['m']);
      const stranger = addWorker(['m']);
      const view = await service.load({ modelId: 'big', workerId: w.worker.id, verifiedOpToken: TOKEN }, audit('model-load'));
      service.onLifecycleStatus(stranger.worker, status(view.taskId, 'completed'));
      service.onLifecycleStatus(w.worker, status('load-unknown', 'completed'));
      expect(await service.loadTask(view.taskId)).toMatchObject({ status: 'loading', workers: [{ status: 'sent' }] });

      service.onLifecycleStatus(w.worker, status(view.taskId, 'accepted'));
      expect(await service.loadTask(view.taskId)).toMatchObject({ workers: [{ status: 'accepted' }] });
      service.onLifecycleStatus(w.worker, status(view.taskId, 'loading', { progress: 0.25 }));
      expect(await service.loadTask(view.taskId)).toMatchObject({ progress: 0.25, workers: [{ status: 'loading' }] });
      service.onLifecycleStatus(w.worker, status(view.taskId, 'failed', { error: 'out of memory' }));
      expect(await service.loadTask(view.taskId)).toMatchObject({ status: 'failed', error: `${w.worker.name}: failed: out of memory` });
      // A late report after the end changes nothing.
      service.onLifecycleStatus(w.worker, status(view.taskId, 'completed'));
      expect(await service.loadTask(view.taskId)).toMatchObject({ status: 'failed' });
    });

    it('an unsupported report fails the flush with the worker’s reason', async () => {
      const w = addWorker(['m']);
      const answer = service.flush({ scope: 'all', verifiedOpToken: TOKEN }, audit('cache-flush'));
      const failure = failureOf(answer);
      await settle();
      const [frame] = sentOps(w.channel);
      service.onLifecycleStatus(w.worker, status(frame.task_id, 'unsupported', { error: 'no cache' }));
      expect((await failure).message).toContain('unsupported: no cache');
    });

    it('a load the worker never finishes fails with timeout at the load deadline', async () => {
      const w = addWorker(['m']);
      const view = await service.load({ modelId: 'big', verifiedOpToken: TOKEN }, audit('model-load'));
      clock.advance(599_999);
      expect(await service.loadTask(view.taskId)).toMatchObject({ status: 'loading' });
      clock.advance(1);
      const task = await service.loadTask(view.taskId);
      expect(task.status).toBe('failed');
      expect(task.workers[0].error).toBe('timeout: the worker did not finish within 600 s');
      expect(sentOps(w.channel)).toHaveLength(1);
    });
  });

  describe('settling after an unload', () => {
    async function unloadCompleted(w: { worker: WorkerSession; channel: RecordingChannel }) {
      const answer = service.unload({ modelId: 'm', verifiedOpToken: TOKEN }, audit('model-unload'));
      await settle();
      const [frame] = sentOps(w.channel);
      service.onLifecycleStatus(w.worker, status(frame.task_id, 'completed'));
      await answer;
    }

    it('a worker still listing the model is asked for its models; the model stays out of routing until its models_update', async () => {
      const w = addWorker(['m', 'n']);
      await unloadCompleted(w);
      expect(w.channel.sent.at(-1)).toEqual({ type: 'models_refresh', reason: 'lifecycle' });
      expect(routable(w.worker, 'm')).toBe(false);
      fleet.onModelsChanged(w.worker, { models: ['m', 'n'] });
      expect(routable(w.worker, 'm')).toBe(true);
    });

    it('without a models_update the model is routed again at the settle timeout', async () => {
      const w = addWorker(['m']);
      await unloadCompleted(w);
      clock.advance(119_999);
      expect(routable(w.worker, 'm')).toBe(false);
      clock.advance(1);
      expect(routable(w.worker, 'm')).toBe(true);
    });

    it('an unload that timed out keeps the model held until the worker’s late word: failed puts it back', async () => {
      const w = addWorker(['m']);
      const answer = service.unload({ modelId: 'm', verifiedOpToken: TOKEN }, audit('model-unload'));
      const failure = failureOf(answer);
      await settle();
      const [frame] = sentOps(w.channel);
      clock.advance(60_000);
      expect((await failure).message).toContain('timeout: the worker did not finish within 60 s');
      expect(routable(w.worker, 'm')).toBe(false);
      service.onLifecycleStatus(w.worker, status(frame.task_id, 'failed', { error: 'busy' }));
      expect(routable(w.worker, 'm')).toBe(true);
    });
  });

  it('at start, model loads a previous run of this instance left unfinished are marked failed', async () => {
    const part = { workerId: 'w-old', name: 'old', pool: 'local', status: 'loading' as const, progress: 0.4 };
    await store.save({
      id: 'load-old',
      modelId: 'big',
      status: 'loading',
      options: {},
      parts: [part],
      gatewayInstanceId: config.instanceId,
      createdAt: 1,
      updatedAt: 1,
    });
    await service.onModuleInit();
    const task = await service.loadTask('load-old');
    expect(task.status).toBe('failed');
    expect(task.workers[0].error).toMatch(/^gateway_restarted: /);
  });
});
