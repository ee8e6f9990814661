import { Inject, Logger } from '@nestjs/common';
import { OnGatewayConnection, OnGatewayInit, WebSocketGateway } from '@nestjs/websockets';
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { WebSocket, WebSocketServer } from 'ws';
import { APP_CONFIG, AppConfig } from '../config';
import { CLOCK, Clock } from '../common/clock';
import { CLUSTER_AUTH_HEADER, CLUSTER_FROM_HEADER, clusterAuthMatches, internalRouteServed } from '../cluster/internal-link';
import { Fleet } from '../fleet/fleet.service';
import { ForwardRelays, RelaySink } from './forward-relays';
import { encodeRefusal, LINK_PATH, linkRequestCap, readCallerMessage, RefusalCode } from './link-protocol';
import { WorkerFrames } from './worker-frames';
import { rawSocketOf } from '../common/ws-tcp-socket';
import { watchLink } from './link-socket';

const log = new Logger('ClusterLink');

/**
 * Chunks are joined up to this many characters at most, and to a sixth of a worker frame's cap: a
 * character of a chunk is at most 6 bytes in JSON (`\u0000`), and the caller accepts a message of
 * twice that cap, so a joined frame always fits where each of its parts did.
 */
const MAX_BATCH_CHARS = 1024 * 1024;

/**
 * The owner's end of the links (cluster mode): other replicas open one WebSocket each to
 * `LINK_PATH` and send the requests they forward to workers connected here. A request runs on a
 * SlotLease granted here (this replica is the authority on its workers' slots); the worker's frames
 * go back on the same link (ForwardRelays). The upgrade is refused (404) outside cluster mode and
 * on the public listener when `CLUSTER_LISTEN_ADDR` is set, and 401 without the cluster secret.
 */
@WebSocketGateway({ path: LINK_PATH, perMessageDeflate: false })
export class LinkServer implements OnGatewayInit, OnGatewayConnection {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(CLOCK) private readonly clock: Clock,
    private readonly fleet: Fleet,
    private readonly frames: WorkerFrames,
  ) {}

  afterInit(server: WebSocketServer): void {
    const { cluster, maxBodyBytes } = this.config;
    server.options.maxPayload = linkRequestCap(maxBodyBytes);
    server.options.verifyClient = (info: { req: IncomingMessage }, done: (ok: boolean, code?: number, message?: string) => void) => {
      if (!cluster.redisUrl || !internalRouteServed(cluster.listenAddr, info.req.socket)) return done(false, 404, 'Not Found');
      if (!clusterAuthMatches(info.req.headers[CLUSTER_AUTH_HEADER], cluster.secret)) return done(false, 401, 'Unauthorized');
      done(true);
    };
  }

  handleConnection(socket: WebSocket, request: IncomingMessage): void {
    const relays = this.frames.handlers;
    if (!(relays instanceof ForwardRelays)) return socket.close(1008, 'not in cluster mode');
    const from = String(request.headers[CLUSTER_FROM_HEADER] ?? '?').slice(0, 128);
    new LinkSession(socket, from, this.fleet, relays, this.clock, this.config.connections.maxWorkerFrameBytes).start();
  }
}

/** One calling replica's link: its requests, relayed until their last frame, cancelled if it goes. */
export class LinkSession implements RelaySink {
  /** Requests of this link being relayed. */
  private readonly open = new Set<string>();
  private readonly maxBatchChars: number;
  /** Writes of this turn are being held to leave together at its end. */
  private turnOpen = false;
  /** The link's TCP socket, corked while the turn is open. */
  private corked: Socket | undefined;
  /** Chunks of one request relayed in this turn, not yet sent. */
  private batch: { id: string; parts: string[]; bytes: number } | undefined;

  constructor(
    private readonly socket: WebSocket,
    private readonly from: string,
    private readonly fleet: Fleet,
    private readonly relays: ForwardRelays,
    private readonly clock: Clock,
    maxWorkerFrameBytes: number,
  ) {
    this.maxBatchChars = Math.min(MAX_BATCH_CHARS, Math.floor(maxWorkerFrameBytes / 6));
  }

  start(): void {
    const { socket } = this;
    socket.on('message', (data, isBinary) => {
      if (!isBinary) this.onMessage(data.toString());
    });
    // A caller host that vanished sends nothing (its pings stop): its requests are cancelled on the workers.
    const unwatch = watchLink(socket, this.clock, false);
    socket.on('close', () => {
      unwatch();
      for (const id of [...this.open]) this.relays.drop(id, this);
      this.open.clear();
    });
    socket.on('error', () => socket.terminate());
  }

  frame(requestId: string, text: string, last: boolean): void {
    this.flush();
    this.endOfTurn();
    this.socket.send(text);
    if (!last) return;
    this.open.delete(requestId);
    // A request's last frame leaves now: what follows it in this turn (its slot's release, the next
    // request placed on that slot, the worker's load published) is not its client's to wait for.
    this.leaveTurn();
  }

  /**
   * A chunk of a relayed request: the chunks of one request that arrive in the same turn of the event
   * loop (a worker's frames come in bursts: one read often holds many) go on as one, joined: the same
   * bytes, none of them later, and one frame to write here and to read and write at the caller.
   */
  chunk(requestId: string, chunk: string): void {
    const b = this.batch;
    if (b?.id === requestId && b.bytes + chunk.length <= this.maxBatchChars) {
      b.parts.push(chunk);
      b.bytes += chunk.length;
      return;
    }
    this.flush();
    this.batch = { id: requestId, parts: [chunk], bytes: chunk.length };
    this.endOfTurn();
  }

  private flush(): void {
    const b = this.batch;
    if (!b) return;
    this.batch = undefined;
    const chunk = b.parts.length === 1 ? b.parts[0] : b.parts.join('');
    this.socket.send(JSON.stringify({ type: 'response_chunk', request_id: b.id, chunk }));
  }

  /**
   * What is relayed in this turn leaves at its end, in one write: the batched chunks are sent and
   * the link's TCP socket, corked until then, is written once.
   */
  private endOfTurn(): void {
    if (this.turnOpen) return;
    this.turnOpen = true;
    this.corked = rawSocketOf(this.socket);
    this.corked?.cork();
    queueMicrotask(() => this.turnOpen && this.leaveTurn());
  }

  /** Sends the batched chunks and writes what the turn corked (early when a request's last frame was sent). */
  private leaveTurn(): void {
    this.turnOpen = false;
    this.flush();
    const tcp = this.corked;
    this.corked = undefined;
    tcp?.uncork();
  }

  private onMessage(text: string): void {
    const msg = readCallerMessage(text);
    if (!msg) {
      log.warn(`replica ${this.from} sent an unreadable link message`);
      // Its id, if one can be read from its head (never from the client's body after it).
      const nl = text.indexOf('\n');
      const id = /"id":"([^"\\]{1,256})"/.exec(nl < 0 ? text.slice(0, 1024) : text.slice(0, Math.min(nl, 1024)))?.[1];
      if (id) this.refuse(id, 'malformed');
      return;
    }
    if ('cancel' in msg) {
      this.open.delete(msg.cancel);
      return this.relays.drop(msg.cancel, this);
    }
    const { head, body } = msg;
    const worker = this.fleet.sessions.get(head.worker);
    if (!worker || worker.remote) return this.refuse(head.id, 'worker_gone');
    // A retry of a request whose cancelled run still holds its slot here waits for another slot.
    if (worker.assigned.has(head.id) || worker.held.has(head.id) || this.relays.has(head.id)) return this.refuse(head.id, 'slot_taken');
    const lease = this.fleet.reserve(worker, head.id, head.model);
    if (!lease) return this.refuse(head.id, 'slot_taken');
    this.open.add(head.id);
    this.relays.open(lease, this, () =>
      lease.send({
        type: 'request',
        request_id: head.id,
        model: head.model,
        endpoint_path: head.endpoint_path,
        is_streaming: head.is_streaming,
        body,
        ...(head.headers ? { headers: head.headers } : {}),
      }),
    );
  }

  private refuse(id: string, code: RefusalCode): void {
    this.socket.send(encodeRefusal(id, code));
  }
}
