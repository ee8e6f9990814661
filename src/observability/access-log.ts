import type { FastifyInstance } from 'fastify';
import { correlationIdOf } from './correlation-id';
import type { AppLogger } from './logger';
import { scrubSecretText } from './redaction';

/** One debug line per finished response (SSE streams included, when they end). */
export function registerAccessLog(fastify: FastifyInstance, logger: AppLogger): void {
  const log = logger.child({ context: 'AccessLog' }).pino;
  fastify.addHook('onResponse', (req, reply, done) => {
    if (log.isLevelEnabled('debug')) {
      log.debug(
        {
          method: req.method,
          url: scrubSecretText(req.url),
          status: reply.statusCode,
          duration_ms: Math.round(reply.elapsedTime * 10) / 10,
          correlation_id: correlationIdOf(req),
        },
        'request completed',
      );
    }
    done();
  });
}
