import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, MoreThanOrEqual, Repository } from 'typeorm';
import { APP_CONFIG, AppConfig } from '../config';
import { CLOCK, Clock, TimerHandle } from '../common/clock';
import { RecentModelIndex } from './recent-model-index';
import { SerialWriteQueue } from '../common/serial-write-queue';
import { WorkerRecordEntity } from './worker-record.entity';
import { WorkerConnectedRecord, WorkerRecords } from './worker-records.port';

/**
 * Worker records in the database, written behind the relay's back: every `record*` call returns
 * at once. Connects, model changes and disconnects are queued for writing right away; heartbeats
 * are only remembered (latest per worker) and written every `heartbeatFlushIntervalMs` in one
 * UPDATE for all workers. "Recently known models" are answered from memory.
 */
@Injectable()
export class TypeOrmWorkerRecords extends WorkerRecords implements OnModuleInit, BeforeApplicationShutdown {
  private readonly log = new Logger('WorkerRecords');
  private readonly writes = new SerialWriteQueue(this.log);
  private readonly recent: RecentModelIndex;
  private pendingHeartbeats = new Map<string, number>();
  private flushQueued = false;
  private flushTimer: TimerHandle | undefined;
  private closed = false;
  /** 3 bound parameters per worker: well under SQLite's 32766 and PostgreSQL's 65535 limits. */
  protected readonly maxWorkersPerStatement: number = 5000;

  constructor(
    @InjectRepository(WorkerRecordEntity) private readonly repo: Repository<WorkerRecordEntity>,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    super();
    this.recent = new RecentModelIndex(config.recentWorkerWindowMs);
  }

  async onModuleInit(): Promise<void> {
    await this.loadRecentWorkers();
    this.flushTimer = this.clock.setInterval(() => this.onFlushTick(), this.config.heartbeatFlushIntervalMs);
  }

  /** Runs before the DataSource is destroyed (that happens in onApplicationShutdown). */
  async beforeApplicationShutdown(): Promise<void> {
    await this.close();
  }

  recordConnected(record: WorkerConnectedRecord): void {
    this.safely('recordConnected', () => {
      this.recent.connected(record.id, record.provider, record.models);
      this.pendingHeartbeats.delete(record.id);
      const row: WorkerRecordEntity = {
        id: record.id,
        provider: record.provider,
        name: record.name,
        models: [...record.models],
        maxConcurrent: record.maxConcurrent,
        gatewayInstanceId: this.config.instanceId,
        remoteAddress: record.remoteAddress,
        connectedAt: record.connectedAt,
        lastHeartbeatAt: record.connectedAt,
        disconnectedAt: null,
        state: 'online',
      };
      this.write(`recording connect of worker ${record.id}`, () => this.repo.upsert(row, ['id']));
    });
  }

  recordModels(workerId: string, models: string[]): void {
    this.safely('recordModels', () => {
      this.recent.modelsChanged(workerId, models);
      const copy = [...models];
      this.write(`recording models of worker ${workerId}`, () => this.repo.update({ id: workerId }, { models: copy }));
    });
  }

  recordHeartbeat(workerId: string, at: number): void {
    // A late heartbeat must not outlive the disconnect (the flush marks its rows online).
    if (this.closed || !this.recent.isConnected(workerId)) return;
    const previous = this.pendingHeartbeats.get(workerId);
    if (previous === undefined || at > previous) this.pendingHeartbeats.set(workerId, at);
  }

  recordDisconnected(workerId: string, at: number): void {
    this.safely('recordDisconnected', () => {
      this.recent.disconnected(workerId, at);
      const heartbeat = this.pendingHeartbeats.get(workerId);
      this.pendingHeartbeats.delete(workerId);
      const change: Partial<WorkerRecordEntity> = { state: 'offline', disconnectedAt: at };
      if (heartbeat !== undefined) change.lastHeartbeatAt = heartbeat;
      this.write(`recording disconnect of worker ${workerId}`, () => this.repo.update({ id: workerId }, change));
    });
  }

  recentlyKnowsModel(provider: string, model: string): boolean {
    return this.recent.knows(provider, model, this.clock.now());
  }

  /** Queues a write of the pending heartbeats and waits for it (and everything queued before it). */
  async flush(): Promise<void> {
    this.queueHeartbeatFlush();
    await this.writes.whenIdle();
  }

  /** Resolves once every queued write has finished; for shutdown and tests. */
  whenIdle(): Promise<void> {
    return this.writes.whenIdle();
  }

  /** Stops the flush timer, writes what is pending and ignores records from then on. */
  async close(): Promise<void> {
    if (this.flushTimer !== undefined) this.clock.clearInterval(this.flushTimer);
    this.flushTimer = undefined;
    await this.flush();
    this.closed = true;
  }

  private onFlushTick(): void {
    this.recent.prune(this.clock.now());
    this.queueHeartbeatFlush();
  }

  private queueHeartbeatFlush(): void {
    if (this.closed || this.flushQueued || this.pendingHeartbeats.size === 0) return;
    this.flushQueued = true;
    const queued = this.writes.enqueue('flushing worker heartbeats', async () => {
      // Taken when the write starts, so heartbeats arriving while earlier writes ran are included.
      this.flushQueued = false;
      const batch = this.pendingHeartbeats;
      this.pendingHeartbeats = new Map();
      await this.writeHeartbeats(batch);
    });
    if (!queued) this.flushQueued = false;
  }

  private async writeHeartbeats(batch: Map<string, number>): Promise<void> {
    const entries = [...batch];
    const size = this.maxWorkersPerStatement;
    if (entries.length <= size) {
      await updateHeartbeats(this.repo.manager, entries);
      return;
    }
    await this.repo.manager.transaction(async (manager) => {
      for (let i = 0; i < entries.length; i += size) {
        await updateHeartbeats(manager, entries.slice(i, i + size));
      }
    });
  }

  private async loadRecentWorkers(): Promise<void> {
    const since = this.clock.now() - this.config.recentWorkerWindowMs;
    try {
      const rows = await this.repo.find({
        where: [{ lastHeartbeatAt: MoreThanOrEqual(since) }, { disconnectedAt: MoreThanOrEqual(since) }],
      });
      // Rows are history, even "online" ones: only connects seen by this process count as connected.
      for (const r of rows) this.recent.seen(r.id, r.provider, r.models, Math.max(r.lastHeartbeatAt, r.disconnectedAt ?? 0));
      this.log.log(`loaded ${rows.length} recently seen worker record(s)`);
    } catch (e) {
      this.log.warn(`could not load recent worker records: ${(e as Error).message}`);
    }
  }

  private write(label: string, run: () => Promise<unknown>): void {
    if (this.closed) {
      this.log.debug(`shutting down: not ${label}`);
      return;
    }
    this.writes.enqueue(label, run);
  }

  private safely(what: string, run: () => void): void {
    try {
      run();
    } catch (e) {
      this.log.warn(`${what} failed: ${(e as Error).message}`);
    }
  }
}

/**
 * One UPDATE for many workers, each with its own timestamp:
 *   SET last_heartbeat_at = CASE id WHEN :id0 THEN :at0 … END WHERE id IN (:id0, …)
 * It also marks the rows online: a worker still sending heartbeats is alive even if a sweep
 * (e.g. after a slow flush) marked it offline.
 */
async function updateHeartbeats(manager: EntityManager, entries: Array<[string, number]>): Promise<void> {
  const params: Record<string, string | number> = {};
  const cases: string[] = [];
  const ids: string[] = [];
  entries.forEach(([id, at], i) => {
    params[`id${i}`] = id;
    params[`at${i}`] = at;
    cases.push(`WHEN :id${i} THEN CAST(:at${i} AS BIGINT)`);
    ids.push(`:id${i}`);
  });
  await manager
    .createQueryBuilder()
    .update(WorkerRecordEntity)
    .set({
      lastHeartbeatAt: () => `CASE id ${cases.join(' ')} ELSE last_heartbeat_at END`,
      state: 'online',
      disconnectedAt: null,
    })
    .where(`id IN (${ids.join(', ')})`)
    .setParameters(params)
    .execute();
}
