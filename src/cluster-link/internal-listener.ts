import http from 'node:http';
import type { FastifyInstance } from 'fastify';
import { INTERNAL_PREFIX, markInternal } from '../cluster/internal-link';

/**
 * `CLUSTER_LISTEN_ADDR`: a plain HTTP listener of its own for the internal routes between replicas
 * (the forwarding link, tasks), so a network policy can keep replica-to-replica traffic off the public port.
 * It hands those requests to the gateway's own router (the same route handlers, which then refuse
 * them on the public listener) and answers anything else 404.
 */
export async function listenInternally(listenAddr: string, fastify: FastifyInstance): Promise<http.Server> {
  const m = /^(\[[^\]]+\]|[^:]*):(\d{1,5})$/.exec(listenAddr.trim());
  if (!m) throw new Error(`CLUSTER_LISTEN_ADDR must be host:port, got "${listenAddr}"`);
  const host = m[1].replace(/^\[|\]$/g, '') || '0.0.0.0';
  const server = http.createServer((req, res) => {
    if (!req.url?.startsWith(`${INTERNAL_PREFIX}/`)) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found"}');
      return;
    }
    fastify.server.emit('request', req, res);
  });
  // The link between replicas (a WebSocket) is upgraded by the same WebSocket server as on the public listener.
  server.on('upgrade', (req, socket, head) => {
    if (req.url?.startsWith(`${INTERNAL_PREFIX}/`)) fastify.server.emit('upgrade', req, socket, head);
    else socket.destroy();
  });
  server.on('connection', (socket) => {
    markInternal(socket);
    socket.setNoDelay(true);
  });
  // Forwarded streams stay open as long as their answers: no request timeout on this listener.
  server.requestTimeout = 0;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(Number(m[2]), host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return server;
}
