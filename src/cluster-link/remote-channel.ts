import http from 'node:http';
import https from 'node:https';
import { Logger } from '@nestjs/common';
import { parseWorkerMessage, ServerToWorkerMessage } from '../protocol';
import { internalHeaders } from '../cluster/internal-link';
import { BACKEND_UNAVAILABLE, SLOT_TAKEN } from '../dispatch/response-frames';
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

  private forward(message: Extract<ServerToWorkerMessage, { type: 'request' }>): void {
    const id = message.request_id;
    const base = this.ctx.urlOf(this.replica);
    // Not from inside the Dispatcher's own send: the failure is taken up once that call returned.
    if (!base) return queueMicrotask(() => this.fail(id, BACKEND_UNAVAILABLE));
    const head = JSON.stringify({
      request_id: id,
      model: message.model,
      endpoint_path: message.endpoint_path,
      is_streaming: message.is_streaming,
      ...(message.headers ? { headers: message.headers } : {}),
    });
    const payload = `${head}\n${message.body}`;
    const url = new URL(`${base}/internal/cluster/v1/workers/${encodeURIComponent(this.workerId)}/requests`);
    const secure = url.protocol === 'https:';
    const call = (secure ? https : http).request(url, {
      method: 'POST',
      agent: secure ? agents.https : agents.http,
      headers: {
        ...internalHeaders(this.ctx.secret, this.ctx.replicaId),
        'content-type': 'application/x-switchboard-forward',
        'content-length': Buffer.byteLength(payload),
      },
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
    call.on('error', () => end(BACKEND_UNAVAILABLE));
    call.on('response', (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        if (res.statusCode === 409) {
          const session = this.session();
          if (session) this.ctx.markFull(session);
          return end(SLOT_TAKEN);
        }
        if (res.statusCode !== 410) log.warn(`replica ${this.replica} refused a forwarded request: HTTP ${res.statusCode}`);
        return end(BACKEND_UNAVAILABLE);
      }
      res.setEncoding('utf8');
      let buffered = '';
      res.on('data', (text: string) => {
        buffered += text;
        let nl: number;
        while ((nl = buffered.indexOf('\n')) >= 0) {
          const line = buffered.slice(0, nl);
          buffered = buffered.slice(nl + 1);
          delivered = true;
          if (this.deliver(line)) {
            end(undefined);
            call.destroy();
            return;
          }
        }
        if (buffered.length > this.ctx.maxLineBytes) {
          call.destroy();
          end(WORKER_DISCONNECTED);
        }
      });
      res.on('end', () => end(WORKER_DISCONNECTED));
      res.on('aborted', () => end(WORKER_DISCONNECTED));
      res.on('error', () => end(WORKER_DISCONNECTED));
    });
    call.end(payload);
  }

  /** One frame from the owner, handed to the Dispatcher; true once it was the request's last (or unusable). */
  private deliver(line: string): boolean {
    const session = this.session();
    if (!session) return true;
    let msg;
    try {
      msg = parseWorkerMessage(line);
    } catch {
      log.warn(`replica ${this.replica} sent an unreadable frame`);
      return true;
    }
    const { frames } = this.ctx;
    switch (msg.type) {
      case 'response_chunk':
        return frames.onChunk(session, msg.request_id, msg.chunk) === 'unknown';
      case 'response_start':
        return frames.onResponseStart(session, msg) === 'unknown';
      case 'response_complete':
        frames.onComplete(session, msg);
        return true;
      case 'error':
        if (msg.request_id) frames.onWorkerError(session, msg.request_id, msg.code);
        return true;
      default:
        return false;
    }
  }

  private fail(requestId: string, code: string): void {
    const session = this.session();
    if (session) this.ctx.frames.onWorkerError(session, requestId, code);
  }
}
