import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';

/**
 * Lets the HTTP server's close finish once its last response is written, instead of waiting for
 * clients to hang up. Node's `server.close()` waits for every connection, and Fastify's close only
 * ends the connections Node calls idle, which leaves two kinds open:
 *
 * - a connection a client opened but has not sent a request on yet: Node counts it as active (a
 *   guard against clients that connect and stay silent), and nothing times it out once the server
 *   is closing. Browsers open such spare connections (Chromium keeps several per host); the
 *   dashboard's browser test hung its gateway's close() for about a minute on one, until Chromium
 *   dropped it.
 * - a keep-alive connection whose request was still being answered: after its response it stays
 *   open for `keepAliveTimeout` (72 s in Fastify).
 *
 * At close both are ended: the unused ones at once (no request is lost: none was sent; a client
 * retries a request that crossed the close on another connection, as it does for any idle
 * keep-alive connection the server closes), the busy ones as soon as their response is written.
 * Requests in flight still get their answers. Only plain HTTP/1.1: with TLS the server is HTTP/2
 * capable and Fastify closes its sessions itself.
 */
export function closeConnectionsOnClose(fastify: FastifyInstance): void {
  const server = fastify.server as Server;
  if (typeof server.closeIdleConnections !== 'function') return;
  // Per connection, not per request: a Set add/delete when a socket opens and closes. (No 'data'
  // listener: it would take the socket off the HTTP parser's fast path.)
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  fastify.addHook('preClose', (done) => {
    for (const socket of sockets) if (socket.bytesRead === 0) socket.destroy();
    // Read when a response finishes: from now on a connection is closed right after its response.
    server.keepAliveTimeout = 1;
    done();
  });
}
