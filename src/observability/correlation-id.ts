import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';

export const CORRELATION_HEADER = 'x-correlation-id';
/** Client ids are echoed only when they are short printable tokens (no header injection, no log spam). */
const ACCEPTABLE = /^[\x21-\x7e]{1,128}$/;

declare module 'fastify' {
  interface FastifyRequest {
    correlationId: string;
  }
}

/** Echo the client's X-Correlation-Id or mint a UUIDv4, on every response (hijacked SSE ones included). */
export function registerCorrelationId(fastify: FastifyInstance): void {
  fastify.decorateRequest('correlationId', '');
  fastify.addHook('onRequest', (req, reply, done) => {
    const id = correlationIdFor(req.headers[CORRELATION_HEADER]);
    req.correlationId = id;
    reply.header(CORRELATION_HEADER, id);
    done();
  });
}

/** The client's id when acceptable, else a fresh UUIDv4. */
export function correlationIdFor(given: string | string[] | undefined): string {
  return typeof given === 'string' && ACCEPTABLE.test(given) ? given : randomUUID();
}

export function correlationIdOf(req: FastifyRequest): string {
  return req.correlationId;
}
