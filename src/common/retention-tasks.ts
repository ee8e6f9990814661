/** Deletes rows older than its own retention as of `now`; returns how many. */
export type RetentionTask = (now: number) => Promise<number>;

/**
 * Where a feature registers the pruning of its own rows: one periodic job runs every registered
 * task, each failing on its own (in the gateway, the worker records' cleanup job,
 * `StaleCleanupService`, provides it). Also the injection token, so features depend on this
 * port and not on the module that runs the job.
 */
export abstract class RetentionTasks {
  /** Adds a pruning step to every sweep, named for logs and results (register before boot: in a constructor). */
  abstract addRetentionTask(name: string, task: RetentionTask): void;
}
