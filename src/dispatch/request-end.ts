import { Clock } from '../common/clock';
import { GatewayError, isRetriable, statusOf } from '../common/gateway-error';
import { AdmissionQueue } from '../queue/admission-queue';
import { ClientBuffers } from './client-buffers';
import { RequestObservers } from './observers/request-observers';
import { ConcurrencyGate } from './concurrency-gate';
import { RelayRequest } from './relay-request';

/** HTTP status recorded for requests whose client left before an answer. */
export const CLIENT_CLOSED = 499;

/**
 * How a request ends — refused, failed or settled — exactly once, and who hears of it: the
 * client's sink and the request observers (metrics, usage, pool figures).
 */
export class RequestEnd {
  constructor(
    private readonly clock: Clock,
    private readonly queue: AdmissionQueue<RelayRequest>,
    private readonly buffers: ClientBuffers,
    private readonly observers: RequestObservers,
    private readonly gate: ConcurrencyGate,
  ) {}

  /** Refuses a request before it runs (admission, routing, queue bounds): counted as a rejection. */
  reject(req: RelayRequest, error: GatewayError): void {
    if (req.phase === 'finished') return; // its client left during admission: recorded then
    if (!req.receivedAt) req.receivedAt = this.clock.now();
    this.observers.rejected(req, error);
    this.fail(req, error);
  }

  fail(req: RelayRequest, error: GatewayError): void {
    if (req.phase === 'finished') return;
    req.errorCode = error.code;
    this.settle(req, statusOf(error.code), error);
    if (!req.sink.clientGone) req.sink.fail(this.inContext(req, error));
  }

  /** Marks the request finished exactly once and records it. */
  settle(req: RelayRequest, status: number, error?: GatewayError): void {
    this.clearTimer(req);
    // A collected body goes now; a client's unread backlog stays counted until it drains or leaves.
    this.buffers.dropBody(req);
    req.phase = 'finished';
    this.observers.finished(req, status, this.clock.now(), error);
    // Last: its key's or tenant's next waiting request may go to a worker now.
    this.gate.release(req);
  }

  /** Stops the request's timer and takes it off the watchdogs' lines (it left its worker or ended). */
  clearTimer(req: RelayRequest): void {
    if (req.watch) {
      req.watch.delete(req);
      req.watch = undefined;
    }
    if (req.timer) {
      this.clock.clearTimeout(req.timer);
      req.timer = undefined;
    }
  }

  /**
   * Adds what the client may act on: the pool and engine involved, and for every retriable
   * error a retry hint from the pool's current queue state.
   */
  private inContext(req: RelayRequest, error: GatewayError): GatewayError {
    const provider = req.provider?.name;
    if (!provider) return error;
    const fields: Record<string, unknown> = { pool_id: provider };
    const engine = req.worker?.runner?.type;
    if (engine) fields.engine = engine;
    const retryAfterMs = isRetriable(error.code) ? this.queue.retryAfterMs(provider) : undefined;
    return error.with({ retryAfterMs, fields });
  }
}
