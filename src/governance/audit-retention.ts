import { Inject, Injectable, Optional } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config';
import { RetentionTasks } from '../common/retention-tasks';
import { AuditLog } from './audit-log';

/**
 * Retention of the audit trail, one step of every cleanup sweep: rows older than
 * `governance.audit_retention_days` (0 = kept), and sooner, after
 * `governance.unauthenticated_audit_retention_days`, rows of requests refused at the admin token
 * check, which anyone can send: they cannot grow the table without bound.
 */
@Injectable()
export class AuditRetention {
  private readonly retentionMs: number;
  private readonly unauthenticatedMs: number;

  constructor(
    private readonly store: AuditLog,
    @Inject(APP_CONFIG) config: AppConfig,
    @Optional() cleanup?: RetentionTasks,
  ) {
    this.retentionMs = config.governance.auditRetentionMs;
    this.unauthenticatedMs = config.governance.unauthenticatedAuditRetentionMs;
    if ((this.retentionMs > 0 || this.unauthenticatedMs > 0) && cleanup) cleanup.addRetentionTask('lifecycle_audit', (now) => this.prune(now));
  }

  /** Deletes the rows that have outlived their retention as of `now`; returns how many. */
  async prune(now: number): Promise<number> {
    let deleted = 0;
    if (this.retentionMs > 0) deleted += await this.store.deleteBefore(now - this.retentionMs, 'all');
    if (this.unauthenticatedMs > 0) deleted += await this.store.deleteBefore(now - this.unauthenticatedMs, 'unauthenticated');
    return deleted;
  }
}
