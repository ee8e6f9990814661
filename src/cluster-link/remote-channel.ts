import http from 'node:http';
import https from 'node:https';
import { Logger } from '@nestjs/common';
import { parseWorkerMessage, ServerToWorkerMessage } from '../protocol';
import { internalHeaders } from '../cluster/internal-link';
import { REPLICA_UNREACHABLE, SLOT_TAKEN } from '../dispatch/response-frames';
import type { WorkerChannel, WorkerSession } from '../fleet/worker-session';
import type { RequestFrames } from './forward-relays';
import { WORKER_DISCONNECTED } from './forward-relays';

const log = new Logger('ClusterLink');

/** What every remote channel shares: where replicas are, how to reach them, where frames go. */
export interface ForwardContext {
  secret: string;
  replicaId: string;
  /** The advertised URL of a live replica; undefined when it is not (or no longer) a member. */
  urlOf(replica: string): string | undefined;
  /** The Dispatcher's frame handlers: a forwarded request's frames arrive as a worker's would. */
  frames: RequestFrames;
  /** The worker's replica had no free slot: count it full until it publishes again. */
  markFull(session: WorkerSession): void;
  /** A cancelled request's slot is given back at once: its replica holds the real one. */
  confirmCancelled(session: WorkerSession, requestId: string): void;
  /** Largest line of frames read back (a worker frame's own cap). */
  maxLineBytes: number;
}

/** How long the owner replica has to answer whether it granted the slot. */
const CONNECT_TIMEOUT_MS = 5000;

const agents = {
  http: new http.Agent({ keepAlive: true, scheduling: 'lifo' }),
  https: new https.Agent({ keepAlive: true, scheduling: 'lifo' }),
};

/**
 * A worker connected to another replica, as a channel: a `request` frame becomes an HTTP request
 * to that replica (the internal link, straight between the two replicas), whose answer — the
 * worker's frames, one JSON object per line — is handed to the Dispatcher as if the worker had sent
 * them here; a `cancel` aborts that request (the owner then cancels on the worker). Other frames
 * (drains, lifecycle) are the owner's business and are not sent.
 */
export class RemoteChannel implements WorkerChannel {
  private readonly inFlight = new Map<string, http.ClientRequest>();
  private target: { base: string; url: URL; secure: boolean; headers: Record<string, string> } | undefined;

  constructor(
    private readonly ctx: ForwardContext,
    private readonly replica: string,
    private readonly workerId: string,
    private readonly session: () => WorkerSession | undefined,
  ) {}

  send(message: ServerToWorkerMessage): void {
    if (message.type === 'request') return this.forward(message);
    if (message.type === 'cancel') {
      const call = this.inFlight.get(message.request_id);
      if (call) {
        this.inFlight.delete(message.request_id);
        call.destroy();
      }
      const session = this.session();
      if (session) queueMicrotask(() => this.ctx.confirmCancelled(session, message.request_id));
    }
  }

  close(): void {
    // The worker's connection is its own replica's; nothing to close here.
  }

  /** Its replica is gone: every call in flight ends now (each reports its request as lost). */
  abandon(): void {
    for (const call of [...this.inFlight.values()]) call.destroy();
  }

  private forward(message: Extract<ServerToWorkerMessage, { type: 'request' }>): void {
    const id = message.request_id;
    const base = this.ctx.urlOf(this.replica);
    // Not from inside the Dispatcher's own send: the failure is taken up once that call returned.
    if (!base) return queueMicrotask(() => this.fail(id, REPLICA_UNREACHABLE));
    const head = JSON.stringify({
      request_id: id,
      model: message.model,
      endpoint_path: message.endpoint_path,
      is_streaming: message.is_streaming,
      ...(message.headers ? { headers: message.headers } : {}),
    });
    const payload = `${head}\n${message.body}`;
    const target = this.targetFor(base);
    const call = (target.secure ? https : http).request(target.url, {
      method: 'POST',
      agent: target.secure ? agents.https : agents.http,
      headers: { ...target.headers, 'content-length': Buffer.byteLength(payload) },
    });
    this.inFlight.set(id, call);
    let delivered = false;
    let ended = false;
    const end = (code: string | undefined) => {
      if (ended) return;
      ended = true;
      // A cancel took it out already: the request is over here, nothing more to report.
      if (this.inFlight.get(id) !== call) return;
      this.inFlight.delete(id);
      if (code) this.fail(id, delivered ? WORKER_DISCONNECTED : code);
    };
    call.setNoDelay(true);
    // Until the owner says whether it granted the slot (it answers at once): a host that is gone
    // sends no reset, and the request must not wait for the kernel's connect timeout.
    call.setTimeout(CONNECT_TIMEOUT_MS, () => call.destroy());
    call.on('error', () => end(REPLICA_UNREACHABLE));
    // Whatever ended the call (an abandon, a timeout) and was not reported yet is reported now.
    call.on('close', () => end(REPLICA_UNREACHABLE));
    call.on('response', (res) => {
      call.setTimeout(0);
      if (res.statusCode !== 200) {
        res.resume();
        if (res.statusCode === 409) {
          const session = this.session();
          if (session) this.ctx.markFull(session);
          return end(SLOT_TAKEN);
        }
        if (res.statusCode !== 410) log.warn(`replica ${this.replica} refused a forwarded request: HTTP ${res.statusCode}`);
        return end(REPLICA_UNREACHABLE);
      }
      res.setEncoding('utf8');
      let buffered = '';
      let finished = false;
      res.on('data', (text: string) => {
        if (finished) return;
        buffered += text;
        let nl: number;
        while ((nl = buffered.indexOf('\n')) >= 0) {
          const line = buffered.slice(0, nl);
          buffered = buffered.slice(nl + 1);
          delivered = true;
          const next = this.deliver(line);
          if (next === 'more') continue;
          end(undefined);
          finished = true;
          buffered = '';
          // After a request's last frame its replica ends the answer at once: reading on to that end
          // returns the connection to the pool (destroying it would cost a new connection per request).
          if (next === 'abandon') call.destroy();
          return;
        }
        if (buffered.length > this.ctx.maxLineBytes) {
          call.destroy();
          end(WORKER_DISCONNECTED);
        }
      });
      // Cut off: before any frame the request is requeued elsewhere; after one, its stream ends with an error.
      res.on('end', () => end(REPLICA_UNREACHABLE));
      res.on('aborted', () => end(REPLICA_UNREACHABLE));
      res.on('error', () => end(REPLICA_UNREACHABLE));
    });
    call.end(payload);
  }

  /**
   * One frame from the owner, handed to the Dispatcher: `more` frames follow, this was the request's
   * `last`, or the rest is of no use here (`abandon`: the request is gone here, or the frame unreadable).
   */
  private deliver(line: string): 'more' | 'last' | 'abandon' {
    const session = this.session();
    if (!session) return 'abandon';
    let msg;
    try {
      msg = parseWorkerMessage(line);
    } catch {
      log.warn(`replica ${this.replica} sent an unreadable frame`);
      return 'abandon';
    }
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

  /** The URL and headers of this worker's forward route at `base` (its replica's address), built once per address. */
  private targetFor(base: string): { url: URL; secure: boolean; headers: Record<string, string> } {
    if (this.target?.base !== base) {
      const url = new URL(`${base}/internal/cluster/v1/workers/${encodeURIComponent(this.workerId)}/requests`);
      const headers = { ...internalHeaders(this.ctx.secret, this.ctx.replicaId), 'content-type': 'application/x-switchboard-forward' };
      this.target = { base, url, secure: url.protocol === 'https:', headers };
    }
    return this.target;
  }

  private fail(requestId: string, code: string): void {
    const session = this.session();
    if (!session) return;
    // Its replica cannot be reached: no more requests to this worker until that replica publishes it again.
    if (code === REPLICA_UNREACHABLE) this.ctx.markFull(session);
    this.ctx.frames.onWorkerError(session, requestId, code);
  }
}
