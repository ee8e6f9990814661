import type { CancelReason, TokenCounts } from '../../protocol';
import type { GatewayError } from '../../common/gateway-error';
import type { WorkerSnapshot } from '../../fleet/worker-snapshot';
import type { CacheReport } from '../../usage/cache-headers';
import type { RelayRequest } from '../relay-request';
import type { WatchdogKind } from '../watchdogs';

/**
 * Something that accounts for requests (metrics, usage records, pool figures): told what happens
 * to a request, never able to change it. Every method is optional; all run synchronously on the
 * request path, so an observer only appends to in-memory state (writes happen later, in batches).
 */
export interface RequestObserver {
  /** The dispatcher took the request (admission passed; routing and the queue come next). */
  submitted?(req: RelayRequest, now: number): void;
  /** A worker was given the request (again after a requeue), just before its `request` frame is sent. */
  placed?(req: RelayRequest, worker: WorkerSnapshot, now: number): void;
  /** The request ended, once, with the HTTP status its client got (499: the client left first). */
  finished?(req: RelayRequest, status: number, now: number, error: GatewayError | undefined): void;
  /** The request was refused before it ran (admission, routing, queue bounds). */
  rejected?(req: RelayRequest, error: GatewayError): void;
  /** The worker's completion carried token counts. */
  tokens?(req: RelayRequest, counts: TokenCounts): void;
  /** The first response byte came from `worker`. */
  firstByte?(req: RelayRequest, worker: WorkerSnapshot, now: number): void;
  /** The worker completed the request; `cache` is what its backend reported about prompt caching. */
  answered?(req: RelayRequest, worker: WorkerSnapshot, cache: CacheReport | undefined): void;
  /** The gateway gave up on the request (client gone, timeout, too slow, too large). */
  cancelled?(reason: CancelReason): void;
  /** The request left a queue (or was dispatched at once) after waiting `ms` not yet reported. */
  waited?(req: RelayRequest, ms: number): void;
  /** The request's worker vanished before answering: it goes back to routing. */
  requeued?(req: RelayRequest): void;
  /** A watchdog caught the request: no first byte in time (it moves on), or its stream stalled (it ends). */
  watchdog?(kind: WatchdogKind, req: RelayRequest): void;
}
