import type { LifecycleStatusMessage } from '../protocol';
import type { WorkerSession } from '../fleet/worker-session';

/** Receives a worker's negotiated `lifecycle_status` reports (implemented by LifecycleService). */
export interface LifecycleReportHandler {
  onLifecycleStatus(worker: WorkerSession, message: LifecycleStatusMessage): void;
}
