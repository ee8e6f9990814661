import { Logger } from '@nestjs/common';
import WebSocket from 'ws';
import type { Clock } from '../common/clock';
import { internalHeaders } from '../cluster/internal-link';
import { parseWorkerMessage, WorkerToServerMessage } from '../protocol';
import { encodeCancel, isLinkControl, LINK_PATH, readRefusal, RefusalCode } from './link-protocol';
import { watchLink } from './link-socket';

const log = new Logger('ClusterLink');

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
  /** Messages written while the link opens, each with the request id it belongs to. */
  private pending: Array<{ id: string; text: string }> | undefined = [];
  private unwatch: (() => void) | undefined;
  private closed = false;

  constructor(
    /** The owner's advertised URL this link was opened to. */
    readonly base: string,
    opts: { secret: string; replicaId: string; maxPayload: number },
    private readonly clock: Clock,
    private readonly onClosed: (link: PeerLink) => void,
  ) {
    const url = `${base.replace(/^http/, 'ws').replace(/\/+$/, '')}${LINK_PATH}`;
    this.socket = new WebSocket(url, {
      headers: internalHeaders(opts.secret, opts.replicaId),
      perMessageDeflate: false,
      handshakeTimeout: CONNECT_TIMEOUT_MS,
      maxPayload: opts.maxPayload,
    });
    this.socket.on('open', () => this.opened());
    this.socket.on('message', (data, isBinary) => {
      if (!isBinary) this.onMessage(data.toString());
    });
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
    this.write(id, text);
  }

  /** The request is over here: the owner stops it on the worker, nothing more of it is read. */
  cancel(id: string): void {
    if (!this.calls.delete(id)) return;
    // Not sent yet (the link is still opening): it never will be, and there is nothing to cancel.
    const waiting = this.pending?.findIndex((m) => m.id === id) ?? -1;
    if (waiting >= 0) this.pending!.splice(waiting, 1);
    else this.write(id, encodeCancel(id));
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

  private write(id: string, text: string): void {
    if (this.closed) return;
    if (this.pending) this.pending.push({ id, text });
    else this.socket.send(text);
  }

  private opened(): void {
    const waiting = this.pending ?? [];
    this.pending = undefined;
    for (const m of waiting) this.socket.send(m.text);
    this.unwatch = watchLink(this.socket, this.clock, true);
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
    // A request's last frame ends its call before it is handed on: handling it may send the same
    // request again (to another worker of that replica, on this link) under the same id.
    if (msg.type === 'response_complete' || msg.type === 'error') this.calls.delete(id);
    const next = call.frame(msg);
    // The request is gone here (or its frame was of no use): the owner stops relaying it.
    if (next === 'abandon' && this.calls.get(id) === call) this.cancel(id);
  }

  private onClose(): void {
    if (this.closed) return;
    this.closed = true;
    this.pending = undefined;
    this.unwatch?.();
    this.onClosed(this);
    const lost = [...this.calls.values()];
    this.calls.clear();
    for (const call of lost) call.lost();
  }
}

/** This replica's links to the others, one per replica, opened when a request is first forwarded there. */
export class PeerLinks {
  private readonly links = new Map<string, PeerLink>();
  private closed = false;

  constructor(
    private readonly opts: { secret: string; replicaId: string; maxPayload: number; urlOf(replica: string): string | undefined },
    private readonly clock: Clock,
  ) {}

  /** The link to a replica; undefined when it is not (or no longer) a member. */
  to(replica: string): PeerLink | undefined {
    const base = this.closed ? undefined : this.opts.urlOf(replica);
    const known = this.links.get(replica);
    if (!base) {
      // It left the cluster (or this replica is stopping): its link goes too.
      known?.close();
      return undefined;
    }
    if (known?.base === base) return known;
    // It restarted at another address: the old link's requests are lost with it.
    known?.close();
    const link = new PeerLink(base, this.opts, this.clock, (gone) => {
      if (this.links.get(replica) === gone) this.links.delete(replica);
    });
    this.links.set(replica, link);
    return link;
  }

  /** A replica left the cluster: its link closes (the requests on it are lost, if any were left). */
  forget(replica: string): void {
    this.links.get(replica)?.close();
  }

  /** This replica stops: every link closes, and no new one opens. */
  closeAll(): void {
    this.closed = true;
    for (const link of [...this.links.values()]) link.close();
  }
}
