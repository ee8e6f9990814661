import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';

/** Longest a connection is kept open, reading and discarding, after its early answer. */
export const LINGER_MS = 10_000;

/**
 * Answers sent before the request body arrived (a 413 for a body over MAX_BODY_BYTES, refused
 * before it is read) close the connection: the rest of the body cannot be told apart from a next
 * request. Closing a socket with unread bytes in its receive buffer makes the kernel send a reset,
 * and a client still writing then sees EPIPE or ECONNRESET instead of the answer (its library
 * gives up on the write error before reading). So the connection is half-closed after the answer
 * (the client reads it and its end) and the remaining body is read and discarded — up to
 * `discardBytes` and LINGER_MS — before the socket is destroyed. A body announced far beyond the
 * bound is not waited for: the answer is sent and the connection closed at once.
 */
export function registerLingeringClose(fastify: FastifyInstance, discardBytes: number): void {
  fastify.addHook('onSend', (request, reply, payload, done) => {
    const req = request.raw;
    // HTTP/2 streams are reset on their own; only HTTP/1.1 sockets carry the rest of the body.
    if (!req.complete && req.httpVersionMajor === 1 && !('stream' in req)) {
      reply.header('connection', 'close');
      const socket = req.socket as Socket & { destroySoon?: () => void };
      if (typeof socket.destroySoon === 'function' && !lingerHooked.has(socket)) lingerAfterAnswer(req, socket, discardBytes);
    }
    done(null, payload);
  });
}

const lingerHooked = new WeakSet<Socket>();

function lingerAfterAnswer(req: IncomingMessage, socket: Socket & { destroySoon?: () => void }, discardBytes: number): void {
  const declared = Number(req.headers['content-length']);
  const received = socket.bytesRead;
  // Announced more than the bound past what arrived: waiting would only cost us bandwidth.
  if (Number.isFinite(declared) && declared - (received - headerBytesGuess(req)) > discardBytes) return;
  lingerHooked.add(socket);
  // Node closes a `connection: close` response's socket with destroySoon() once the answer is
  // written; for this socket it becomes a half-close followed by a bounded discard.
  socket.destroySoon = () => {
    if (socket.writable) socket.end();
    const limit = socket.bytesRead + discardBytes;
    const timer = setTimeout(() => socket.destroy(), LINGER_MS);
    timer.unref();
    const check = () => {
      if (socket.bytesRead >= limit) socket.destroy();
    };
    socket.on('data', check);
    socket.once('end', () => socket.destroy()); // the client finished sending
    socket.once('close', () => clearTimeout(timer));
    socket.resume();
    check();
  };
}

/** The request line and headers are already counted in bytesRead; their size is approximated. */
function headerBytesGuess(req: IncomingMessage): number {
  let n = (req.method?.length ?? 0) + (req.url?.length ?? 0) + 12;
  for (let i = 0; i < req.rawHeaders.length; i += 2) n += req.rawHeaders[i].length + req.rawHeaders[i + 1].length + 4;
  return n;
}
