import { Logger } from '@nestjs/common';
import type { CancelReason } from '../protocol';
import type { WorkerSnapshot } from '../fleet/worker-snapshot';
import type { RelayRequest } from './relay-request';

/**
 * The dispatcher's per-request debug lines (docs/observability.md). LOG_LEVEL is a restart
 * setting, so below debug the lines are not even built: the request path pays one boolean test.
 */
export class DispatchLog {
  private readonly log = new Logger('Dispatcher');

  constructor(readonly enabled: boolean) {}

  queued(req: RelayRequest, pool: string, model: string): void {
    if (!this.enabled) return;
    this.log.debug({
      msg: 'request queued',
      correlation_id: req.correlationId,
      request_id: req.id,
      pool,
      model,
      tenant: req.tenant,
      priority: req.priority,
      queue_position: req.queuePosition,
    });
  }

  placed(req: RelayRequest, worker: WorkerSnapshot, model: string): void {
    if (!this.enabled) return;
    this.log.debug({
      msg: 'request placed',
      correlation_id: req.correlationId,
      request_id: req.id,
      pool: worker.provider,
      worker_id: worker.id,
      worker_name: worker.name,
      model,
      // Its place in the queue when it last queued; 0 when a worker took it at once.
      queue_position: req.queuePosition,
      queue_wait_ms: req.waitedMs,
    });
  }

  cancelSent(req: RelayRequest, reason: CancelReason, wire: CancelReason, worker: WorkerSnapshot): void {
    if (!this.enabled) return;
    this.log.debug({ msg: 'cancel sent', request_id: req.id, reason, wire_reason: wire, worker_id: worker.id, correlation_id: req.correlationId });
  }

  replanned(req: RelayRequest, from: string, to: string): void {
    if (!this.enabled) return;
    this.log.debug({ msg: 'queued request re-planned', request_id: req.id, correlation_id: req.correlationId, from_model: from, to_model: to });
  }
}
