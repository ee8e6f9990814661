import type { FastifyInstance } from 'fastify';
import { correlationIdOf } from './correlation-id';
import type { AppLogger } from './logger';
import { scrubSecretText } from './redaction';

/** What a handler may attach to a request for its access-log line (routing outcome, say). */
export interface AccessLogFields {
  accessLogFields?: () => Record<string, unknown>;
}

/** One info line per finished request (SSE streams included, when they end); probes at debug. */
export function registerAccessLog(fastify: FastifyInstance, logger: AppLogger): void {
  const log = logger.child({ context: 'AccessLog' }).pino;
  // Declared up front, so a handler setting it does not change the shape of every request object.
  fastify.decorateRequest('accessLogFields', null);
  // The level is fixed for the process's life: with neither level on, no line is ever written, and
  // no request needs to pass through a hook for it (Fastify runs onResponse hooks per response).
  if (!log.isLevelEnabled('info') && !log.isLevelEnabled('debug')) return;
  fastify.addHook('onResponse', (req, reply, done) => {
    // Probes and scrapes are frequent and uninteresting: they only show at debug level.
    const level = req.url.startsWith('/health') || req.url.startsWith('/metrics') ? 'debug' : 'info';
    if (log.isLevelEnabled(level)) {
      log[level](
        {
          method: req.method,
          url: scrubSecretText(req.url),
          // Inference replies are hijacked and written on the raw response, so read its status.
          status: reply.raw.statusCode,
          duration_ms: Math.round(reply.elapsedTime * 10) / 10,
          correlation_id: correlationIdOf(req),
          ...(req as AccessLogFields).accessLogFields?.(),
        },
        'request completed',
      );
    }
    done();
  });
}
