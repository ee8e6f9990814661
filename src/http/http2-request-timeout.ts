import { constants, Http2ServerRequest } from 'node:http2';
import type { FastifyInstance } from 'fastify';

/**
 * HTTP_REQUEST_TIMEOUT_SECS for HTTP/2 streams (TLS). Node applies its request timeout only to
 * HTTP/1.1 connections, so an HTTP/2 client could send its headers and then one DATA byte every
 * few seconds, holding the stream (and a handler's buffers) forever. A request whose body has not
 * fully arrived by the deadline is cancelled (RST_STREAM CANCEL). A request sent without a body
 * (END_STREAM on its headers) is never watched, and the timer stops as soon as the body is in,
 * so long responses — SSE included — are never cut.
 */
export function registerHttp2RequestTimeout(fastify: FastifyInstance, requestTimeoutMs: number): void {
  fastify.addHook('onRequest', (req, _reply, done) => {
    const raw = req.raw as unknown as Http2ServerRequest;
    if (raw.httpVersionMajor !== 2 || raw.complete || raw.stream?.endAfterHeaders) return done();
    const stream = raw.stream;
    const timer = setTimeout(() => {
      if (!raw.complete && !stream.destroyed) stream.close(constants.NGHTTP2_CANCEL);
    }, requestTimeoutMs);
    timer.unref();
    const stop = () => clearTimeout(timer);
    raw.once('end', stop);
    stream.once('close', stop);
    done();
  });
}
