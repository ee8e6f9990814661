import { Inject, Injectable, Optional } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { APP_CONFIG, AppConfig } from '../config';
import { RetentionTasks } from '../common/retention-tasks';
import { UsageRecordEntity } from './usage-record.entity';

/**
 * Retention of usage records (`USAGE_RETENTION_DAYS`): rows received before the cutoff are deleted
 * by the existing cleanup job, one more step of every sweep (`STALE_SWEEP_INTERVAL_SECS`). Rows go
 * in chunks of `chunkSize`, so a large backlog (after lowering the retention, say) never becomes
 * one huge transaction; at most `maxChunksPerSweep` chunks per sweep, the next sweep goes on.
 */
@Injectable()
export class UsageRetention {
  protected readonly chunkSize: number = 10_000;
  protected readonly maxChunksPerSweep: number = 50;
  private readonly retentionMs: number;

  constructor(
    @InjectRepository(UsageRecordEntity) private readonly repo: Repository<UsageRecordEntity>,
    @Inject(APP_CONFIG) config: AppConfig,
    @Optional() cleanup?: RetentionTasks,
  ) {
    this.retentionMs = config.usage.retentionMs;
    // Registered while the application is being built, before the cleanup job's first sweep at boot.
    if (this.retentionMs > 0 && cleanup) cleanup.addRetentionTask('usage_records', (now) => this.prune(now));
  }

  /** Deletes the records that have outlived the retention as of `now`; 0 when retention is off. */
  prune(now: number): Promise<number> {
    return this.retentionMs > 0 ? this.deleteReceivedBefore(now - this.retentionMs) : Promise.resolve(0);
  }

  /** Deletes records received before `cutoff` (epoch ms), chunk by chunk; returns how many. */
  async deleteReceivedBefore(cutoff: number): Promise<number> {
    let total = 0;
    for (let chunk = 0; chunk < this.maxChunksPerSweep; chunk++) {
      // DELETE … WHERE id IN (SELECT id … LIMIT n): portable, unlike DELETE … LIMIT.
      const expired = this.repo.createQueryBuilder('expired').select('expired.id').where('expired.receivedAt < :cutoff').limit(this.chunkSize);
      const result = await this.repo
        .createQueryBuilder()
        .delete()
        .from(UsageRecordEntity)
        .where(`id IN (${expired.getQuery()})`)
        .setParameters({ cutoff })
        .execute();
      const deleted = result.affected ?? 0;
      total += deleted;
      if (deleted < this.chunkSize) break;
    }
    return total;
  }
}
