import { Inject, Injectable, Optional } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config';
import { RetentionTasks } from '../common/retention-tasks';
import { ArtifactStore } from './artifact-store';

/**
 * Retention of artifacts (`ARTIFACTS_RETENTION_DAYS`): artifacts created before the cutoff, with
 * their tags and transcripts, are deleted by the existing cleanup job, one more step of every
 * sweep (`STALE_SWEEP_INTERVAL_SECS`), in chunks (see `ArtifactStore.deleteCreatedBefore`).
 * Lineage is not followed: a kept artifact may name a parent that has expired.
 */
@Injectable()
export class ArtifactRetention {
  private readonly retentionMs: number;

  constructor(
    private readonly store: ArtifactStore,
    @Inject(APP_CONFIG) config: AppConfig,
    @Optional() cleanup?: RetentionTasks,
  ) {
    this.retentionMs = config.artifacts.retentionMs;
    // Registered while the application is being built, before the cleanup job's first sweep at boot.
    if (this.retentionMs > 0 && cleanup) cleanup.addRetentionTask('artifacts', (now) => this.prune(now));
  }

  /** Deletes the artifacts that have outlived the retention as of `now`; 0 when retention is off. */
  prune(now: number): Promise<number> {
    return this.retentionMs > 0 ? this.store.deleteCreatedBefore(now - this.retentionMs) : Promise.resolve(0);
  }
}
