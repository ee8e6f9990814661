import { Logger } from '@nestjs/common';
import { AppConfig } from '../config';
import { Clock } from '../common/clock';
import { Errors } from '../common/gateway-error';
import { CancelReason, Features, ResponseCompleteMessage, ResponseStartMessage, TokenCounts } from '../protocol';
import { Fleet } from '../fleet/fleet.service';
import { WorkerSession } from '../fleet/worker-session';
import { Router } from '../routing/router.service';
import { readCacheHeaders } from '../usage/cache-headers';
import { ClientBuffers } from './client-buffers';
import { RequestObservers } from './observers/request-observers';
import { RelayRequest } from './relay-request';
import { RequestEnd } from './request-end';
import { Watchdogs } from './watchdogs';

/** What a frame handler learns: `unknown` means the worker spoke about a request it never had. */
export type FrameVerdict = 'ok' | 'unknown';

/** Worker `error` code meaning the backend could not be reached: nothing was processed. */
export const BACKEND_UNAVAILABLE = 'backend_unavailable';
/**
 * Cluster mode only (never on a worker's wire): the replica holding the worker had no free slot
 * for a forwarded request after all. Nothing was processed; the request is routed again.
 */
export const SLOT_TAKEN = 'slot_taken';
/**
 * Cluster mode only: the link to the worker's replica failed before the first byte (the replica
 * is gone, unreachable, or no longer holds the worker). Requeued like `backend_unavailable`, but
 * not the worker's failure: its health is not charged for a replica's loss.
 */
export const REPLICA_UNREACHABLE = 'replica_unreachable';

/** A code a worker sent: the gateway's own cluster codes are not a worker's to use (they would steer rescue). */
export function workerCode(code: string): string {
  return code === SLOT_TAKEN || code === REPLICA_UNREACHABLE ? 'worker_error' : code;
}

/** What the frames need back from the Dispatcher: ending a lease, and routing a request again. */
export interface LeaseControl {
  /** Cancels the request on its worker (its slot stays held until the worker confirms). */
  cancelLease(req: RelayRequest, reason: CancelReason): void;
  /** The worker let go of the request before answering: requeue it, or fail it (`counted` false: it never had the slot). */
  rescue(req: RelayRequest, counted?: boolean): void;
}

/**
 * A worker's frames about the requests it holds: chunks, `response_start`, completion and errors,
 * relayed to each request's client (streamed as they come, or collected for a whole answer).
 */
export class ResponseFrames {
  private readonly log = new Logger('Dispatcher');

  constructor(
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly router: Router,
    private readonly fleet: Fleet,
    private readonly buffers: ClientBuffers,
    private readonly end: RequestEnd,
    private readonly observers: RequestObservers,
    private readonly leases: LeaseControl,
    /** The requests on workers, by id (shared with the Dispatcher, which adds and removes them). */
    private readonly onWorkers: Map<string, RelayRequest>,
    private readonly watchdogs: Watchdogs,
  ) {}

  onChunk(worker: WorkerSession, requestId: string, chunk: string): FrameVerdict {
    const req = this.requestOn(worker, requestId);
    if (!req) return this.lateFrame(worker, requestId);
    this.watchdogs.spoke(req, this.clock.now());
    if (req.streamedBytes === 0) this.firstByte(req, worker);
    const bytes = Buffer.byteLength(chunk);
    req.streamedBytes += bytes;
    if (req.streamedBytes > this.config.maxStreamBytes) {
      this.giveUp(req, 'stream_too_large');
      this.end.fail(req, Errors.streamTooLarge());
      return 'ok';
    }
    if (!req.isStreaming) {
      const over = this.buffers.overCeiling(req, bytes);
      if (over) return this.overCeiling(req, over);
      this.buffers.collect(req, chunk, bytes);
      return 'ok';
    }
    if (req.phase !== 'streaming') {
      req.phase = 'streaming';
      req.sink.startStream();
    }
    // Its own backlog is full: only this request ends; the worker's other streams never wait.
    if (!this.buffers.write(req, chunk, bytes)) this.tooSlow(req);
    return 'ok';
  }

  /** Negotiated `response_start`: the stream begins now, with the backend's status and headers. */
  onResponseStart(worker: WorkerSession, msg: ResponseStartMessage): FrameVerdict {
    const req = this.requestOn(worker, msg.request_id);
    if (!req) return this.lateFrame(worker, msg.request_id);
    this.watchdogs.spoke(req, this.clock.now());
    if (!req.isStreaming || req.phase !== 'assigned' || msg.status_code < 200) return 'ok';
    req.phase = 'streaming';
    req.sink.startStream(msg.status_code, msg.headers);
    return 'ok';
  }

  onComplete(worker: WorkerSession, msg: ResponseCompleteMessage): FrameVerdict {
    const req = this.requestOn(worker, msg.request_id);
    if (!req) return this.fleet.confirmCancelled(worker, msg.request_id) ? 'ok' : this.lateFrame(worker, msg.request_id);
    const lease = this.release(req);
    if (msg.token_counts) this.countTokens(req, msg.token_counts);
    req.tokenCounts = msg.token_counts;
    // The backend's own processing time, when the worker negotiated reporting it (usage records).
    if (msg.gpu_time_ms !== undefined && worker.features.has(Features.GPU_TIME)) req.backendMs = msg.gpu_time_ms;
    this.observers.answered(req, worker, readCacheHeaders(msg.headers));
    if (req.streamedBytes === 0) {
      this.firstByte(req, worker);
      if (msg.status_code >= 500) this.router.failed(worker, `http_${msg.status_code}`);
      else this.router.succeeded(worker);
    } else this.router.succeeded(worker);
    if (req.phase === 'streaming') {
      // The stream's final status is what the worker reports (its backend's).
      this.end.settle(req, msg.status_code);
      req.sink.endStream(msg.status_code);
    } else if (msg.status_code < 200) {
      // An interim (1xx) status is not an answer: relaying it would leave the client waiting.
      this.end.fail(req, Errors.workerError());
    } else {
      // A body the gateway cannot hold under its ceiling is not taken on (the slot is already free).
      const over = msg.body ? this.buffers.overCeiling(req, Buffer.byteLength(msg.body)) : undefined;
      if (over) {
        this.end.fail(req, over === 'request' ? Errors.streamTooLarge() : Errors.gatewayOverloaded());
        lease.announceFree();
        return 'ok';
      }
      // Collected chunks are handed over as they are: joining them would make a second copy.
      const body = msg.body ?? req.bufferedBody ?? '';
      this.end.settle(req, msg.status_code);
      // X-GPU-Time-Ms: the daemon's own measurement when negotiated, else how long the request held the worker.
      req.sink.gpuTime?.(req.backendMs ?? Math.max(0, this.clock.now() - req.assignedAt));
      req.sink.sendComplete(msg.status_code, msg.headers ?? {}, body);
      this.buffers.sent(req);
    }
    lease.announceFree();
    return 'ok';
  }

  onWorkerError(worker: WorkerSession, requestId: string, code: string): void {
    const req = this.requestOn(worker, requestId);
    if (!req) {
      this.fleet.confirmCancelled(worker, requestId);
      return;
    }
    this.log.warn({ msg: 'worker reported an error', worker_id: worker.id, request_id: requestId, code, correlation_id: req.correlationId });
    const lease = this.release(req);
    const beforeFirstByte = req.streamedBytes === 0;
    if (code === SLOT_TAKEN && beforeFirstByte) {
      this.leases.rescue(req, false);
      lease.announceFree();
      return;
    }
    if (code === REPLICA_UNREACHABLE && beforeFirstByte) {
      // The link failed, not the worker: requeued, the worker neither charged nor avoided (its
      // channel counts it full until its replica publishes it again).
      this.leases.rescue(req);
      lease.announceFree();
      return;
    }
    if (beforeFirstByte) this.router.failed(worker, code);
    if (code === BACKEND_UNAVAILABLE && beforeFirstByte) {
      // Nothing reached the backend: another worker may serve it (counts toward the requeue limit).
      (req.plan.avoid ??= new Set()).add(worker.id);
      this.leases.rescue(req);
    } else {
      this.end.fail(req, Errors.workerError());
    }
    lease.announceFree();
  }

  /** The client's backlog stayed full (or has no room left): only its request ends. */
  tooSlow(req: RelayRequest): void {
    if (req.phase !== 'streaming') return;
    this.giveUp(req, 'client_too_slow');
    this.end.fail(req, Errors.clientTooSlow());
  }

  /** The request this worker holds under `requestId`, if it holds one. */
  private requestOn(worker: WorkerSession, requestId: string): RelayRequest | undefined {
    return worker.assigned.has(requestId) ? this.onWorkers.get(requestId) : undefined;
  }

  /** The worker answered: its slot is free (announced once the answer is delivered). */
  private release(req: RelayRequest) {
    const lease = req.lease!;
    lease.release();
    this.onWorkers.delete(req.id);
    return lease;
  }

  private lateFrame(worker: WorkerSession, requestId: string): FrameVerdict {
    return worker.isLate(requestId) ? 'ok' : 'unknown';
  }

  private giveUp(req: RelayRequest, reason: CancelReason): void {
    this.observers.cancelled(reason);
    this.leases.cancelLease(req, reason);
  }

  /**
   * Collecting this request's body would pass the buffer ceiling (see ClientBuffers.ceiling): it
   * alone ends — its worker is told to stop (`stream_too_large`, the one reason meaning "no more
   * of this response"), and its client hears why: `stream_too_large` when the answer alone is over
   * the ceiling, a retriable `gateway_overloaded` when other held answers fill it.
   */
  private overCeiling(req: RelayRequest, over: 'request' | 'total'): FrameVerdict {
    this.giveUp(req, 'stream_too_large');
    this.end.fail(req, over === 'request' ? Errors.streamTooLarge() : Errors.gatewayOverloaded());
    return 'ok';
  }

  private firstByte(req: RelayRequest, worker: WorkerSession): void {
    const now = this.clock.now();
    req.firstByteAt = now;
    if (req.lease) req.lease.responding = true;
    this.observers.firstByte(req, worker, now);
    this.router.firstByte(worker, now - req.assignedAt);
  }

  private countTokens(req: RelayRequest, counts: TokenCounts): void {
    req.onTokens?.(counts.total_tokens ?? (counts.prompt_tokens ?? 0) + (counts.completion_tokens ?? 0));
    this.observers.tokens(req, counts);
  }
}
