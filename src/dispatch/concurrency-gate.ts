import { concurrencyHeaders } from '../queue/concurrency-caps';
import type { RelayRequest } from './relay-request';

/**
 * `max_concurrent` of keys and tenants on the request path (docs/routing.md#concurrency-caps): a
 * request whose key or tenant already has that many requests on workers waits in the queue, in
 * the fair order, until one of them ends; `max_queued` still bounds the wait. Requests without a
 * cap pay one `undefined` check per step.
 */
export class ConcurrencyGate {
  constructor(
    /** Tries to put a waiting request on a worker now (false when no worker can take it). */
    private readonly placeWaiting: (req: RelayRequest) => boolean,
  ) {}

  /** A cap of the request is full: it may not go to a worker now. */
  blocked(req: RelayRequest): boolean {
    if (!req.caps || req.capsHeld) return false;
    for (const cap of req.caps) if (cap.full) return true;
    return false;
  }

  /** The request waits in the queue: its caps know, so that one of theirs ending can wake it. */
  waits(req: RelayRequest): void {
    // A requeued request keeps its place under its caps (it has not ended): it is not waiting for room.
    if (!req.caps || req.capsHeld) return;
    for (const cap of req.caps) cap.waiting.add(req);
    this.tellClient(req);
  }

  /** A worker took the request: it counts against its caps until it ends (a requeue keeps its place). */
  acquire(req: RelayRequest): void {
    if (!req.caps || req.capsHeld) return;
    req.capsHeld = true;
    for (const cap of req.caps) {
      cap.waiting.delete(req);
      cap.inFlight++;
    }
    this.tellClient(req);
  }

  /** `x-concurrency-limit` and `x-concurrency-in-flight` as they stand (the response carries the last). */
  private tellClient(req: RelayRequest): void {
    const headers = concurrencyHeaders(req.caps!);
    if (headers) req.sink.addHeaders?.(headers);
  }

  /**
   * The request ended: its place goes to the oldest request of the same cap
   * still waiting (when a worker can take it; otherwise the next freed slot's pull finds it).
   */
  release(req: RelayRequest): void {
    if (!req.caps) return;
    const held = req.capsHeld;
    req.capsHeld = false;
    for (const cap of req.caps) {
      cap.waiting.delete(req);
      if (!held) continue;
      cap.inFlight--;
      for (const next of cap.waiting) {
        if (cap.full || !this.placeWaiting(next)) break;
      }
    }
  }
}
