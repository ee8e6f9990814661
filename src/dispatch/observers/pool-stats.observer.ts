import { Injectable } from '@nestjs/common';
import type { TokenCounts } from '../../protocol';
import type { GatewayError } from '../../common/gateway-error';
import { PoolStats } from '../../providers/pool-stats';
import type { RelayRequest } from '../relay-request';
import { RequestObserver } from './request-observer';

/** The per-pool figures of `/v1/pools/:id/health` and `/admin/stats`. */
@Injectable()
export class PoolStatsObserver implements RequestObserver {
  constructor(private readonly stats: PoolStats) {}

  finished(req: RelayRequest, status: number, _now: number, error: GatewayError | undefined): void {
    this.stats.finished(poolOf(req, error), status, error?.code, req, error?.message);
  }

  rejected(req: RelayRequest, error: GatewayError): void {
    this.stats.rejected(poolOf(req, error), error.code);
  }

  watchdog(kind: string): void {
    this.stats.watchdogs[kind] = (this.stats.watchdogs[kind] ?? 0) + 1;
  }

  tokens(req: RelayRequest, counts: TokenCounts): void {
    this.stats.tokens(req.provider.name, counts.prompt_tokens ?? 0, counts.completion_tokens ?? 0);
  }
}

/** The pool a finished request counts for: where it was admitted, else the pool its error names. */
function poolOf(req: RelayRequest, error?: GatewayError): string | undefined {
  if (req.provider) return req.provider.name;
  const named = error?.details.fields?.pool_id;
  return typeof named === 'string' ? named : undefined;
}
