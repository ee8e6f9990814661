import type { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { Errors } from '../common/gateway-error';
import { dialectOf, errorBody, errorHeaders } from '../common/error-dialect';

/**
 * Connections accepted beyond the cap, each allowed only to become a worker WebSocket (or be
 * refused): a worker cannot be told apart from a client before its request headers arrive, and a
 * full cap must not keep workers from reconnecting. Bounded so the overflow cannot itself exhaust
 * file descriptors; each lives at most HTTP_HEADERS_TIMEOUT_SECS without sending its headers.
 */
export const OVERFLOW_CONNECTIONS = 64;

/**
 * MAX_CLIENT_CONNECTIONS: a cap on concurrent client connections, counting only connections that
 * have not been upgraded. An upgraded socket (a worker's WebSocket) leaves the count the moment it
 * upgrades, so connected workers never use up client capacity, and a connection arriving while
 * the cap is full is still accepted (up to OVERFLOW_CONNECTIONS of them) so that a worker can
 * upgrade on it; a plain request on such a connection is answered `503 too_many_connections`
 * with `connection: close`. Upgrades other than a worker's WebSocket (or, with the cluster secret,
 * the link between replicas) are refused by the WebSocket server, and a worker socket without a
 * valid secret is closed after its handshake, so upgrading does not let clients dodge the cap for long.
 */
export class ClientConnectionCap {
  private readonly clients = new Set<Socket>();
  private readonly overflow = new Set<Socket>();

  constructor(
    private readonly max: number,
    private readonly overflowMax = OVERFLOW_CONNECTIONS,
  ) {}

  /** Counts the server's raw connections (TLS included: 'connection' is the TCP socket). */
  attach(server: EventEmitter): void {
    server.on('connection', (socket: Socket) => this.onConnection(socket));
    server.on('upgrade', (_req: unknown, socket: Socket) => this.onUpgrade(socket));
  }

  /** Answers requests arriving on overflow connections before any other work is done for them. */
  register(fastify: FastifyInstance): void {
    fastify.addHook('onRequest', (req, reply, done) => {
      if (!this.isOverflow(req.raw.socket)) return done();
      const error = Errors.tooManyConnections();
      void reply
        .code(503)
        .headers({ ...errorHeaders(error), connection: 'close', 'content-type': 'application/json' })
        .send(JSON.stringify(errorBody(dialectOf(req.url.split('?')[0]), error)));
    });
  }

  /** Client connections held now (upgraded worker sockets excluded). */
  get clientConnections(): number {
    return this.clients.size;
  }

  isOverflow(socket: Socket | undefined): boolean {
    return !!socket && this.overflow.size > 0 && this.overflow.has(rawSocketOf(socket));
  }

  private onConnection(socket: Socket): void {
    if (this.clients.size < this.max) {
      this.clients.add(socket);
      socket.once('close', () => this.clients.delete(socket));
      return;
    }
    if (this.overflow.size >= this.overflowMax) {
      socket.destroy();
      return;
    }
    this.overflow.add(socket);
    socket.once('close', () => this.overflow.delete(socket));
  }

  private onUpgrade(socket: Socket): void {
    const raw = rawSocketOf(socket);
    this.clients.delete(raw);
    this.overflow.delete(raw);
  }
}

/**
 * The TCP socket under a TLS socket ('connection' hands out the TCP one, requests and upgrades
 * the TLS one). `_parent` is how Node's TLS server links them; plain sockets are their own.
 */
function rawSocketOf(socket: Socket): Socket {
  return (socket as Socket & { _parent?: Socket | null })._parent ?? socket;
}
