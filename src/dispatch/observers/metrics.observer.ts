import { Injectable } from '@nestjs/common';
import { Counter } from 'prom-client';
import type { CancelReason, TokenCounts } from '../../protocol';
import type { GatewayError } from '../../common/gateway-error';
import type { WorkerSnapshot } from '../../fleet/worker-snapshot';
import type { CacheReport } from '../../usage/cache-headers';
import { MetricsService } from '../../observability/metrics.service';
import type { RelayRequest } from '../relay-request';
import { WATCHDOG_KINDS, WatchdogKind } from '../watchdogs';
import { RequestObserver } from './request-observer';

/** A request's life as Prometheus series (docs/observability.md). */
@Injectable()
export class MetricsObserver implements RequestObserver {
  /** `switchboard_watchdog_total{kind}`: requests a watchdog caught (docs/routing.md#watchdogs). */
  private readonly watchdogs: Counter<'kind'>;

  constructor(private readonly metrics: MetricsService) {
    this.watchdogs = new Counter({
      name: 'switchboard_watchdog_total',
      help: 'Requests a watchdog caught, by kind: first_byte (no first byte in time, moved to another worker) or stream_idle (stream stalled, ended).',
      labelNames: ['kind'],
      registers: [metrics.registry],
    });
    // Both series exist from the start, at zero, so a rate is defined before the first catch.
    for (const kind of WATCHDOG_KINDS) this.watchdogs.inc({ kind }, 0);
  }

  finished(req: RelayRequest, status: number, now: number): void {
    // A request no provider took names a model nobody serves: its name is not worth a series.
    this.metrics.requestFinished(
      { provider: req.provider?.name ?? 'none', model: req.targetModel || '(unrouted)', endpoint: req.endpointPath, status, tenant: req.tenant },
      (now - req.receivedAt) / 1000,
    );
    // The slot it held on its worker (placement to completion), as a share of that worker.
    const worker = req.worker;
    const translated = req.plan?.translated;
    if (translated !== undefined && worker) this.metrics.translated(translated, worker.provider);
    if (worker && req.assignedAt) this.metrics.workerBusy(worker.provider, req.tenant, (now - req.assignedAt) / 1000 / Math.max(1, worker.maxConcurrent));
  }

  rejected(_req: RelayRequest, error: GatewayError): void {
    this.metrics.rejection(error.code);
  }

  tokens(req: RelayRequest, counts: TokenCounts): void {
    const provider = req.provider.name;
    if (counts.prompt_tokens) this.metrics.tokens(provider, req.targetModel, req.tenant, 'prompt', counts.prompt_tokens);
    if (counts.completion_tokens) this.metrics.tokens(provider, req.targetModel, req.tenant, 'completion', counts.completion_tokens);
  }

  firstByte(req: RelayRequest, worker: WorkerSnapshot, now: number): void {
    this.metrics.timeToFirstByte(worker.provider, req.targetModel, (now - req.receivedAt) / 1000);
  }

  answered(req: RelayRequest, worker: WorkerSnapshot, cache: CacheReport | undefined): void {
    if (cache) this.metrics.backendCache(worker.provider, req.targetModel, cache);
  }

  cancelled(reason: CancelReason): void {
    this.metrics.cancellation(reason);
  }

  waited(req: RelayRequest, ms: number): void {
    this.metrics.queueWait(req.provider.name, ms / 1000);
  }

  requeued(req: RelayRequest): void {
    this.metrics.requeue(req.provider.name);
  }

  watchdog(kind: WatchdogKind): void {
    this.watchdogs.inc({ kind });
  }
}
