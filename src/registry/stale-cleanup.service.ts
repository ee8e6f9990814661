import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { APP_CONFIG, AppConfig } from '../config';
import { CLOCK, Clock, TimerHandle } from '../common/clock';
import { RetentionTask, RetentionTasks } from '../common/retention-tasks';
import { WorkerRecordEntity } from './worker-record.entity';

export interface SweepResult {
  markedOffline: number;
  deleted: number;
  /** Rows deleted by each registered retention task (present once a task is registered). */
  pruned?: Record<string, number>;
}

export type { RetentionTask } from '../common/retention-tasks';

/**
 * Keeps worker records truthful when nobody recorded a disconnect (a gateway crashed or was
 * killed) and bounded in size:
 * - at boot, this instance's records still marked online are marked offline (their sockets died with the process);
 * - every `staleSweepIntervalMs`, online records of any instance whose persisted heartbeat is older than
 *   `heartbeatTimeoutMs` plus one flush interval (persisted heartbeats lag by up to that) are marked offline,
 *   and offline records older than `workerRecordRetentionMs` are deleted.
 * A record marked offline here gets its last heartbeat as its disconnect time.
 *
 * Other features register their own retention in the same pass (`addRetentionTask`, e.g. usage
 * records); each task runs after the worker-record steps and fails on its own.
 */
@Injectable()
export class StaleCleanupService implements RetentionTasks, OnModuleInit, BeforeApplicationShutdown {
  private readonly log = new Logger('StaleCleanup');
  private timer: TimerHandle | undefined;
  private running: Promise<SweepResult> | undefined;
  private readonly retentionTasks = new Map<string, RetentionTask>();

  constructor(
    @InjectRepository(WorkerRecordEntity) private readonly repo: Repository<WorkerRecordEntity>,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async onModuleInit(): Promise<void> {
    try {
      const released = await this.markOwnRecordsOffline();
      if (released > 0) this.log.log(`marked ${released} record(s) left online by a previous run of ${this.config.instanceId} offline`);
    } catch (e) {
      this.log.warn(`could not release this instance's worker records: ${(e as Error).message}`);
    }
    await this.sweep();
    this.timer = this.clock.setInterval(() => void this.sweep(), this.config.staleSweepIntervalMs);
  }

  async beforeApplicationShutdown(): Promise<void> {
    if (this.timer !== undefined) this.clock.clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** Adds a pruning step to every sweep, named for logs and results (register before boot: in a constructor). */
  addRetentionTask(name: string, task: RetentionTask): void {
    this.retentionTasks.set(name, task);
  }

  /** Marks records of this gateway instance that are still online offline; returns how many. */
  async markOwnRecordsOffline(): Promise<number> {
    const result = await this.repo
      .createQueryBuilder()
      .update(WorkerRecordEntity)
      .set({ state: 'offline', disconnectedAt: () => 'last_heartbeat_at' })
      .where('state = :online AND gateway_instance_id = :instanceId', { online: 'online', instanceId: this.config.instanceId })
      .execute();
    return result.affected ?? 0;
  }

  /** One cleanup pass; a call while a pass is running waits for that pass. Never rejects. */
  sweep(): Promise<SweepResult> {
    this.running ??= this.runSweep().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async runSweep(): Promise<SweepResult> {
    const now = this.clock.now();
    const result: SweepResult = { markedOffline: 0, deleted: 0 };
    try {
      result.markedOffline = await this.markStaleOffline(now - this.config.heartbeatTimeoutMs - this.config.heartbeatFlushIntervalMs);
      result.deleted = await this.deleteOfflineBefore(now - this.config.workerRecordRetentionMs);
      if (result.markedOffline + result.deleted > 0) {
        this.log.log(`marked ${result.markedOffline} stale worker record(s) offline, deleted ${result.deleted} old one(s)`);
      }
    } catch (e) {
      this.log.warn(`worker record sweep failed: ${(e as Error).message}`);
    }
    for (const [name, task] of this.retentionTasks) {
      result.pruned ??= {};
      result.pruned[name] = 0;
      try {
        result.pruned[name] = await task(now);
        if (result.pruned[name] > 0) this.log.log(`deleted ${result.pruned[name]} expired row(s) of ${name}`);
      } catch (e) {
        this.log.warn(`pruning ${name} failed: ${(e as Error).message}`);
      }
    }
    return result;
  }

  private async markStaleOffline(heartbeatCutoff: number): Promise<number> {
    const result = await this.repo
      .createQueryBuilder()
      .update(WorkerRecordEntity)
      .set({ state: 'offline', disconnectedAt: () => 'last_heartbeat_at' })
      .where('state = :online AND last_heartbeat_at < :cutoff', { online: 'online', cutoff: heartbeatCutoff })
      .execute();
    return result.affected ?? 0;
  }

  private async deleteOfflineBefore(cutoff: number): Promise<number> {
    const result = await this.repo
      .createQueryBuilder()
      .delete()
      .from(WorkerRecordEntity)
      .where('state = :offline AND COALESCE(disconnected_at, last_heartbeat_at) < :cutoff', { offline: 'offline', cutoff })
      .execute();
    return result.affected ?? 0;
  }
}
