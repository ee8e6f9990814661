import type { ResponseCompleteMessage, ResponseStartMessage } from '../protocol';
import type { FrameVerdict, ResponseFrames } from '../dispatch/response-frames';
import { BACKEND_UNAVAILABLE } from '../dispatch/response-frames';
import type { Fleet } from '../fleet/fleet.service';
import type { SlotLease } from '../fleet/slot-lease';
import type { WorkerSession } from '../fleet/worker-session';

/** The frame handlers a worker link calls (the Dispatcher's, or these relays in front of them). */
export type RequestFrames = Pick<ResponseFrames, 'onChunk' | 'onComplete' | 'onResponseStart' | 'onWorkerError'>;

/** Error code a forwarded request ends with when its worker left after answering began. */
export const WORKER_DISCONNECTED = 'worker_disconnected';

/** Where a relayed request's frames go: the link to the calling replica. */
export interface RelaySink {
  /** One frame (serialised) of a request; `last` when it is the request's last. */
  frame(requestId: string, text: string, last: boolean): void;
  /** A `response_chunk` of a request (the sink may join a burst of them into one frame). */
  chunk(requestId: string, chunk: string): void;
}

interface Relay {
  lease: SlotLease;
  out: RelaySink;
}

/**
 * The owner's side of forwarded requests (cluster mode): a request another replica sent to a
 * worker connected here runs on a SlotLease granted here (this replica is the authority on its
 * worker's slots), and that worker's frames for it are written back to the calling replica as they
 * come, one JSON frame per line. Everything about the request's life (timeouts, metrics, usage,
 * retries, the client's dialect) stays at the calling replica; this side only relays.
 */
export class ForwardRelays implements RequestFrames {
  private readonly relays = new Map<string, Relay>();

  constructor(
    private readonly fleet: Fleet,
    private readonly inner: RequestFrames,
  ) {
    fleet.on('workerGone', ({ orphans }) => {
      if (this.relays.size === 0) return;
      for (const lease of orphans) {
        const relay = this.relays.get(lease.requestId);
        if (relay?.lease !== lease) continue;
        // Before any byte the caller may serve it elsewhere; after, its client's stream ends with an error.
        this.finish(relay, {
          type: 'error',
          request_id: lease.requestId,
          code: lease.responding ? WORKER_DISCONNECTED : BACKEND_UNAVAILABLE,
          message: 'worker disconnected',
        });
      }
    });
  }

  /** Requests relayed right now. */
  get size(): number {
    return this.relays.size;
  }

  /** Whether a request id is being relayed (a retry of it must not start a second relay). */
  has(requestId: string): boolean {
    return this.relays.has(requestId);
  }

  /** Starts relaying: the lease's request is sent to the worker; its frames go to `out`. */
  open(lease: SlotLease, out: RelaySink, send: () => void): void {
    this.relays.set(lease.requestId, { lease, out });
    send();
  }

  /**
   * The calling replica gave up on a request (its client left, a timeout, a watchdog; or the link to
   * that replica is gone): the worker is told to stop. Only the relay of that sink (a request id is
   * the caller's, and another link must not end it).
   */
  drop(requestId: string, out: RelaySink): void {
    const relay = this.relays.get(requestId);
    if (relay?.out !== out) return;
    this.relays.delete(requestId);
    relay.lease.cancel('client_disconnect');
  }

  onChunk(worker: WorkerSession, requestId: string, chunk: string): FrameVerdict {
    const relay = this.relayOf(worker, requestId);
    if (!relay) return this.inner.onChunk(worker, requestId, chunk);
    relay.lease.responding = true;
    relay.out.chunk(requestId, chunk);
    return 'ok';
  }

  onResponseStart(worker: WorkerSession, msg: ResponseStartMessage): FrameVerdict {
    const relay = this.relayOf(worker, msg.request_id);
    if (!relay) return this.inner.onResponseStart(worker, msg);
    relay.lease.responding = true;
    relay.out.frame(msg.request_id, JSON.stringify(msg), false);
    return 'ok';
  }

  onComplete(worker: WorkerSession, msg: ResponseCompleteMessage): FrameVerdict {
    const relay = this.relayOf(worker, msg.request_id);
    if (!relay) return this.inner.onComplete(worker, msg);
    this.finish(relay, msg);
    return 'ok';
  }

  onWorkerError(worker: WorkerSession, requestId: string, code: string): void {
    const relay = this.relayOf(worker, requestId);
    if (!relay) return this.inner.onWorkerError(worker, requestId, code);
    this.finish(relay, { type: 'error', request_id: requestId, code, message: 'worker error' });
  }

  private relayOf(worker: WorkerSession, requestId: string): Relay | undefined {
    if (this.relays.size === 0) return undefined;
    const relay = this.relays.get(requestId);
    return relay !== undefined && relay.lease.worker === worker ? relay : undefined;
  }

  /** The last frame: written, the relay ends, the slot is free (and offered to this replica's queue). */
  private finish(relay: Relay, last: object): void {
    this.relays.delete(relay.lease.requestId);
    relay.out.frame(relay.lease.requestId, JSON.stringify(last), true);
    relay.lease.release();
    relay.lease.announceFree();
  }
}
