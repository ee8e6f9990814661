import { Logger } from '@nestjs/common';
import type { ServerToWorkerMessage, WorkerToServerMessage } from '../protocol';
import { REPLICA_UNREACHABLE, SLOT_TAKEN } from '../dispatch/response-frames';
import type { WorkerChannel, WorkerSession } from '../fleet/worker-session';
import type { RequestFrames } from './forward-relays';
import { WORKER_DISCONNECTED } from './forward-relays';
import { encodeRequest, RefusalCode } from './link-protocol';
import type { LinkCall, PeerLink, PeerLinks } from './peer-link';

const log = new Logger('ClusterLink');

/** What every remote channel shares: the links to the other replicas, where frames go. */
export interface ForwardContext {
  links: PeerLinks;
  /** The Dispatcher's frame handlers: a forwarded request's frames arrive as a worker's would. */
  frames: RequestFrames;
  /** The worker's replica had no free slot: count it full until it publishes again. */
  markFull(session: WorkerSession): void;
  /** A cancelled request's slot is given back at once: its replica holds the real one. */
  confirmCancelled(session: WorkerSession, requestId: string): void;
  /** The largest request message the link carries (`linkRequestCap`). */
  maxRequestBytes: number;
}

/**
 * A worker connected to another replica, as a channel: a `request` frame goes over the link to that
 * replica (straight between the two replicas), and the worker's frames for it come back on the same
 * link and are handed to the Dispatcher as if the worker had sent them here; a `cancel` goes over
 * the link too (the owner then cancels on the worker). Other frames (drains, lifecycle) are the
 * owner's business and are not sent.
 */
export class RemoteChannel implements WorkerChannel {
  /** Requests in flight, by id: the link each went on, and its call there. */
  private readonly inFlight = new Map<string, { link: PeerLink; call: LinkCall }>();

  constructor(
    private readonly ctx: ForwardContext,
    private readonly replica: string,
    private readonly workerId: string,
    private readonly session: () => WorkerSession | undefined,
  ) {}

  send(message: ServerToWorkerMessage): void {
    if (message.type === 'request') return this.forward(message);
    if (message.type === 'cancel') {
      const sent = this.inFlight.get(message.request_id);
      if (sent) {
        this.inFlight.delete(message.request_id);
        sent.link.cancel(message.request_id);
      }
      const session = this.session();
      if (session) queueMicrotask(() => this.ctx.confirmCancelled(session, message.request_id));
    }
  }

  close(): void {
    // The worker's connection is its own replica's; nothing to close here.
  }

  /** Its replica is gone: every request in flight ends now (each reports itself lost). */
  abandon(): void {
    for (const [id, { link }] of [...this.inFlight]) link.lose(id);
  }

  private forward(message: Extract<ServerToWorkerMessage, { type: 'request' }>): void {
    const id = message.request_id;
    const link = this.ctx.links.to(this.replica);
    // Not from inside the Dispatcher's own send: the failure is taken up once that call returned.
    if (!link) return queueMicrotask(() => this.fail(id, REPLICA_UNREACHABLE));
    const head = {
      t: 'req' as const,
      id,
      worker: this.workerId,
      model: message.model,
      endpoint_path: message.endpoint_path,
      is_streaming: message.is_streaming,
      ...(message.headers ? { headers: message.headers } : {}),
    };
    const text = encodeRequest(head, message.body);
    const max = this.ctx.maxRequestBytes;
    if (text.length > max / 3 && Buffer.byteLength(text) > max) {
      // Too large for the link (it would close it, and every request on it): only this request fails
      // over to another worker; this one is not counted full for it.
      log.warn(`request ${id} is too large for the link to replica ${this.replica} (${Buffer.byteLength(text)} bytes)`);
      return queueMicrotask(() => this.unsent(id));
    }
    let delivered = false;
    // This call's end (a retry of the request, under the same id, is another call).
    const ended = () => this.inFlight.get(id)?.call === call && this.inFlight.delete(id);
    const call: LinkCall = {
      frame: (msg) => {
        delivered = true;
        const next = this.deliver(msg);
        if (next !== 'more') ended();
        return next;
      },
      refused: (code) => {
        if (!ended()) return;
        if (code === 'malformed') log.warn(`replica ${this.replica} could not read a forwarded request`);
        this.refused(id, code);
      },
      // Before any frame the request is requeued elsewhere; after one, its stream ends with an error.
      lost: () => {
        if (ended()) this.fail(id, delivered ? WORKER_DISCONNECTED : REPLICA_UNREACHABLE);
      },
    };
    this.inFlight.set(id, { link, call });
    link.send(id, text, call);
  }

  /** One frame from the owner, handed to the Dispatcher (see LinkCall.frame). */
  private deliver(msg: WorkerToServerMessage): 'more' | 'last' | 'abandon' {
    const session = this.session();
    if (!session) return 'abandon';
    const { frames } = this.ctx;
    switch (msg.type) {
      case 'response_chunk':
        return frames.onChunk(session, msg.request_id, msg.chunk) === 'unknown' ? 'abandon' : 'more';
      case 'response_start':
        return frames.onResponseStart(session, msg) === 'unknown' ? 'abandon' : 'more';
      case 'response_complete':
        frames.onComplete(session, msg);
        return 'last';
      case 'error':
        if (msg.request_id) frames.onWorkerError(session, msg.request_id, msg.code);
        return 'last';
      default:
        return 'more';
    }
  }

  private refused(id: string, code: RefusalCode): void {
    if (code !== 'slot_taken') return this.fail(id, REPLICA_UNREACHABLE);
    // Its published load was old: full until its replica publishes it again; the request is routed again.
    const session = this.session();
    if (session) this.ctx.markFull(session);
    this.fail(id, SLOT_TAKEN);
  }

  /** The request did not leave: routed again without counting the worker full. */
  private unsent(requestId: string): void {
    const session = this.session();
    if (session) this.ctx.frames.onWorkerError(session, requestId, REPLICA_UNREACHABLE);
  }

  private fail(requestId: string, code: string): void {
    const session = this.session();
    if (!session) return;
    // Its replica cannot be reached: no more requests to this worker until that replica publishes it again.
    if (code === REPLICA_UNREACHABLE) this.ctx.markFull(session);
    this.ctx.frames.onWorkerError(session, requestId, code);
  }
}
