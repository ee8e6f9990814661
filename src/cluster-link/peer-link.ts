import { Logger } from '@nestjs/common';
import WebSocket from 'ws';
import type { Clock, TimerHandle } from '../common/clock';
import { internalHeaders } from '../cluster/internal-link';
import { parseWorkerMessage, WorkerToServerMessage } from '../protocol';
import { encodeCancel, isLinkControl, LINK_PATH, readRefusal, RefusalCode } from './link-protocol';

const log = new Logger('ClusterLink');

/** A link pings this often; each end also checks then whether it heard from the other. */
export const LINK_PING_MS = 2000;
/** A link that heard nothing for this long (no message, no pong) is dead: its requests are lost. */
export const LINK_DEAD_MS = 6000;
/** How long opening a link may take: a host that is gone sends no reset, and nobody waits for the kernel's timeout. */
const CONNECT_TIMEOUT_MS = 5000;

/** What a forwarded request hears from its link. */
export interface LinkCall {
  /** A frame of the worker's for it: `more` follow, this was its `last`, or it is of no use here (`abandon`). */
  frame(msg: WorkerToServerMessage): 'more' | 'last' | 'abandon';
  /** The owner did not send it to the worker. */
  refused(code: RefusalCode): void;
  /** The link broke (or its replica left) before the request's last frame. */
  lost(): void;
}

/**
 * The calling end of the link to one other replica: one WebSocket, opened on first use and kept,
 * carrying every request this replica forwards there and their frames back. While it opens,
 * messages wait in order; when it breaks, every request on it is lost (each decides what that means:
 * requeued before its first byte, an error event after) and the next request opens a new one.
 */
export class PeerLink {
  private readonly calls = new Map<string, LinkCall>();
  private readonly socket: WebSocket;
  private pending: string[] | undefined = [];
  private lastHeard: number;
  private watch: TimerHandle | undefined;
  private closed = false;

  constructor(
    /** The owner's advertised URL this link was opened to. */
    readonly base: string,
    opts: { secret: string; replicaId: string; maxPayload: number },
    private readonly clock: Clock,
    private readonly onClosed: (link: PeerLink) => void,
  ) {
    this.lastHeard = clock.now();
    const url = `${base.replace(/^http/, 'ws').replace(/\/+$/, '')}${LINK_PATH}`;
    this.socket = new WebSocket(url, {
      headers: internalHeaders(opts.secret, opts.replicaId),
      perMessageDeflate: false,
      handshakeTimeout: CONNECT_TIMEOUT_MS,
      maxPayload: opts.maxPayload,
    });
    this.socket.on('open', () => this.opened());
    this.socket.on('message', (data, isBinary) => {
      this.lastHeard = this.clock.now();
      if (!isBinary) this.onMessage(data.toString());
    });
    this.socket.on('pong', () => (this.lastHeard = this.clock.now()));
    this.socket.on('unexpected-response', (_req, res) => {
      log.warn(`replica at ${base} refused the cluster link: HTTP ${res.statusCode}`);
      this.socket.terminate();
    });
    this.socket.on('error', (e) => {
      if (!this.closed) log.warn(`cluster link to ${base}: ${e.message}`);
    });
    this.socket.on('close', () => this.onClose());
  }

  /** Sends a request; its frames go to `call` until its last. */
  send(id: string, text: string, call: LinkCall): void {
    this.calls.set(id, call);
    this.write(text);
  }

  /** The request is over here: the owner stops it on the worker, nothing more of it is read. */
  cancel(id: string): void {
    if (this.calls.delete(id)) this.write(encodeCancel(id));
  }

  /** Its replica is gone: the request is lost now, without waiting for the link to notice. */
  lose(id: string): void {
    const call = this.calls.get(id);
    if (!call) return;
    this.cancel(id);
    call.lost();
  }

  close(): void {
    this.socket.terminate();
  }

  private write(text: string): void {
    if (this.closed) return;
    if (this.pending) this.pending.push(text);
    else this.socket.send(text);
  }

  private opened(): void {
    const waiting = this.pending ?? [];
    this.pending = undefined;
    for (const text of waiting) this.socket.send(text);
    this.watch = this.clock.setInterval(() => {
      if (this.clock.now() - this.lastHeard > LINK_DEAD_MS) return this.socket.terminate();
      this.socket.ping();
    }, LINK_PING_MS);
  }

  private onMessage(text: string): void {
    if (isLinkControl(text)) {
      const refusal = readRefusal(text);
      const call = refusal && this.calls.get(refusal.id);
      if (!call || !refusal) return;
      this.calls.delete(refusal.id);
      return call.refused(refusal.code);
    }
    let msg: WorkerToServerMessage;
    try {
      msg = parseWorkerMessage(text);
    } catch {
      return log.warn(`the replica at ${this.base} sent an unreadable frame`);
    }
    const id = 'request_id' in msg ? msg.request_id : undefined;
    const call = id ? this.calls.get(id) : undefined;
    if (!call || !id) return;
    const next = call.frame(msg);
    if (next === 'last') this.calls.delete(id);
    // The request is gone here (or its frame was of no use): the owner stops relaying it.
    else if (next === 'abandon') this.cancel(id);
  }

  private onClose(): void {
    if (this.closed) return;
    this.closed = true;
    this.pending = undefined;
    if (this.watch !== undefined) this.clock.clearInterval(this.watch);
    this.onClosed(this);
    const lost = [...this.calls.values()];
    this.calls.clear();
    for (const call of lost) call.lost();
  }
}

/** This replica's links to the others, one per replica, opened when a request is first forwarded there. */
export class PeerLinks {
  private readonly links = new Map<string, PeerLink>();

  constructor(
    private readonly opts: { secret: string; replicaId: string; maxPayload: number; urlOf(replica: string): string | undefined },
    private readonly clock: Clock,
  ) {}

  /** The link to a replica; undefined when it is not (or no longer) a member. */
  to(replica: string): PeerLink | undefined {
    const base = this.opts.urlOf(replica);
    if (!base) return undefined;
    const known = this.links.get(replica);
    if (known?.base === base) return known;
    // It restarted at another address: the old link's requests are lost with it.
    known?.close();
    const link = new PeerLink(base, this.opts, this.clock, (gone) => {
      if (this.links.get(replica) === gone) this.links.delete(replica);
    });
    this.links.set(replica, link);
    return link;
  }

  closeAll(): void {
    for (const link of [...this.links.values()]) link.close();
  }
}
