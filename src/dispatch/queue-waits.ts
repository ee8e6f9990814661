import type { RequestObservers } from './observers/request-observers';
import type { RelayRequest } from './relay-request';

/**
 * The request leaves the queue (for a worker, a timeout or its client leaving). A reroute to
 * another queue or model passes `record: false`: the wait is carried on and recorded once, when
 * the request next leaves a queue or reaches a worker.
 */
export function leaveQueue(observers: RequestObservers, req: RelayRequest, now: number, record = true): void {
  if (!req.queuedAt) return;
  const waited = now - req.queuedAt;
  req.waitedMs += waited;
  req.unrecordedWaitMs += waited;
  req.queuedAt = 0;
  req.sink.queueWaited(req.waitedMs);
  if (record) recordWait(observers, req);
}

/** Tells the observers the wait not yet recorded (the queue-wait histogram). */
export function recordWait(observers: RequestObservers, req: RelayRequest): void {
  observers.waited(req, req.unrecordedWaitMs);
  req.unrecordedWaitMs = 0;
  req.waitRecorded = true;
}
