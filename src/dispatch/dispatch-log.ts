import { Logger } from '@nestjs/common';
import type { WorkerSnapshot } from '../fleet/worker-snapshot';
import type { RelayRequest } from './relay-request';

/** The Dispatcher's debug lines about placing requests (one function per line, so its methods stay short). */
export const dispatchLog = {
  queued(log: Logger, req: RelayRequest, model: string): void {
    log.debug({
      msg: 'request queued',
      correlation_id: req.correlationId,
      request_id: req.id,
      pool: req.provider.name,
      model,
      tenant: req.tenant,
      priority: req.priority,
      queue_position: req.queuePosition,
    });
  },

  placed(log: Logger, req: RelayRequest, worker: WorkerSnapshot, model: string): void {
    log.debug({
      msg: 'request placed',
      correlation_id: req.correlationId,
      request_id: req.id,
      pool: worker.provider,
      worker_id: worker.id,
      worker_name: worker.name,
      model,
      queue_wait_ms: req.waitedMs,
    });
  },

  replanned(log: Logger, req: RelayRequest, from: string, to: string): void {
    log.debug({ msg: 'queued request re-planned', request_id: req.id, correlation_id: req.correlationId, from_model: from, to_model: to });
  },
};
