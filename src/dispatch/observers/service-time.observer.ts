import { Inject, Injectable } from '@nestjs/common';
import { CLOCK, Clock } from '../../common/clock';
import type { WorkerSnapshot } from '../../fleet/worker-snapshot';
import { AdmissionQueue } from '../../queue/admission-queue';
import type { RelayRequest } from '../relay-request';
import { RequestObserver } from './request-observer';

/**
 * Service time per slot for the start estimator (`predicted_start_ms`, tasks/start-estimator.ts):
 * how long each completed request held its worker's slot, from assignment to the worker's
 * completion, into the pool's average. One subtraction and a map update per completion.
 */
@Injectable()
export class ServiceTimeObserver implements RequestObserver {
  constructor(
    @Inject(CLOCK) private readonly clock: Clock,
    private readonly queue: AdmissionQueue<RelayRequest>,
  ) {}

  answered(req: RelayRequest, worker: WorkerSnapshot): void {
    if (!req.assignedAt) return;
    this.queue.stats.served(worker.provider, req.targetModel, this.clock.now() - req.assignedAt);
  }
}
