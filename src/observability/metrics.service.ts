import { Injectable } from '@nestjs/common';

export type SlotState = 'busy' | 'free' | 'held';
export type TokenKind = 'prompt' | 'completion';

/**
 * The relay's view of metrics: one method per event, so call sites stay one line and the
 * Prometheus details (names, labels, buckets) live here. Implemented in observability/.
 */
@Injectable()
export class MetricsService {
  requestFinished(_l: { provider: string; model: string; endpoint: string; status: number }, _durationSec: number): void {}
  timeToFirstByte(_provider: string, _model: string, _seconds: number): void {}
  setQueueDepth(_provider: string, _depth: number): void {}
  queueWait(_provider: string, _seconds: number): void {}
  setWorkersConnected(_provider: string, _count: number): void {}
  setWorkerSlots(_provider: string, _state: SlotState, _count: number): void {}
  tokens(_provider: string, _model: string, _tenant: string, _kind: TokenKind, _count: number): void {}
  requeue(_provider: string): void {}
  cancellation(_reason: string): void {}
  rejection(_code: string): void {}
  workerAuthFailure(_reason: string): void {}
}
