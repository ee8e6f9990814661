import { Injectable } from '@nestjs/common';
import type { CancelReason, TokenCounts } from '../../protocol';
import type { GatewayError } from '../../common/gateway-error';
import type { WorkerSnapshot } from '../../fleet/worker-snapshot';
import type { CacheReport } from '../../usage/cache-headers';
import type { RelayRequest } from '../relay-request';
import type { WatchdogKind } from '../watchdogs';
import { MetricsObserver } from './metrics.observer';
import { PoolStatsObserver } from './pool-stats.observer';
import { RequestObserver } from './request-observer';
import { ServiceTimeObserver } from './service-time.observer';
import { TraceObserver } from './trace.observer';
import { UsageObserver } from './usage.observer';

type Hook = keyof RequestObserver;

/**
 * Every observer of requests, called in order (metrics, usage, pool figures, service times,
 * traces). Built once: each event walks only the observers that implement it; traces only while
 * tracing is on.
 */
@Injectable()
export class RequestObservers implements Required<RequestObserver> {
  private readonly all: RequestObserver[];
  private readonly by: { [H in Hook]: RequestObserver[] };

  constructor(metrics: MetricsObserver, usage: UsageObserver, pools: PoolStatsObserver, service: ServiceTimeObserver, traces?: TraceObserver) {
    this.all = traces?.enabled ? [metrics, usage, pools, service, traces] : [metrics, usage, pools, service];
    const of = (hook: Hook) => this.all.filter((o) => typeof o[hook] === 'function');
    this.by = {
      submitted: of('submitted'),
      placed: of('placed'),
      finished: of('finished'),
      rejected: of('rejected'),
      tokens: of('tokens'),
      firstByte: of('firstByte'),
      answered: of('answered'),
      cancelled: of('cancelled'),
      waited: of('waited'),
      requeued: of('requeued'),
      watchdog: of('watchdog'),
    };
  }

  submitted(req: RelayRequest, now: number): void {
    for (const o of this.by.submitted) o.submitted!(req, now);
  }

  placed(req: RelayRequest, worker: WorkerSnapshot, now: number): void {
    for (const o of this.by.placed) o.placed!(req, worker, now);
  }

  finished(req: RelayRequest, status: number, now: number, error: GatewayError | undefined): void {
    for (const o of this.by.finished) o.finished!(req, status, now, error);
  }

  rejected(req: RelayRequest, error: GatewayError): void {
    for (const o of this.by.rejected) o.rejected!(req, error);
  }

  tokens(req: RelayRequest, counts: TokenCounts): void {
    for (const o of this.by.tokens) o.tokens!(req, counts);
  }

  firstByte(req: RelayRequest, worker: WorkerSnapshot, now: number): void {
    for (const o of this.by.firstByte) o.firstByte!(req, worker, now);
  }

  answered(req: RelayRequest, worker: WorkerSnapshot, cache: CacheReport | undefined): void {
    for (const o of this.by.answered) o.answered!(req, worker, cache);
  }

  cancelled(reason: CancelReason): void {
    for (const o of this.by.cancelled) o.cancelled!(reason);
  }

  waited(req: RelayRequest, ms: number): void {
    for (const o of this.by.waited) o.waited!(req, ms);
  }

  requeued(req: RelayRequest): void {
    for (const o of this.by.requeued) o.requeued!(req);
  }

  watchdog(kind: WatchdogKind, req: RelayRequest): void {
    for (const o of this.by.watchdog) o.watchdog!(kind, req);
  }
}
