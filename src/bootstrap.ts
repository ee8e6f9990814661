import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { AppConfig } from './config';
import { AppModule } from './app.module';
import { registerCorrelationId } from './observability/correlation-id';
import { WorkerWsAdapter } from './worker-link/worker-ws.adapter';
import { createLogger } from './observability/logger';
import { registerAccessLog } from './observability/access-log';
import { openFilesWarning, readSoftOpenFilesLimit } from './observability/open-files';
import { ProvidersService } from './providers/providers.service';

/**
 * Builds and starts the gateway on config.listenHost:config.listenPort (port 0 = any free port).
 * Shared by `main.ts` and the integration tests, so both get identical wiring.
 */
export async function createApp(config: AppConfig): Promise<NestFastifyApplication> {
  const adapter = new FastifyAdapter({ bodyLimit: config.maxBodyBytes, logger: false });
  const fastify = adapter.getInstance();
  // Inference bodies are forwarded to workers unmodified, so every body is kept as the raw string;
  // handlers parse what they need and answer malformed JSON in the caller's dialect.
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('*', { parseAs: 'string' }, (_req, body, done) => done(null, body));
  const logger = createLogger(config.logLevel);
  registerCorrelationId(fastify);
  registerAccessLog(fastify, logger);

  const app = await NestFactory.create<NestFastifyApplication>(AppModule.forRoot(config), adapter, {
    logger,
    abortOnError: false,
    bodyParser: false,
  });
  app.useWebSocketAdapter(new WorkerWsAdapter(app));
  if (config.corsOrigins.length > 0) {
    // Off unless configured: browsers on the listed origins may call the API and read these headers.
    app.enableCors({
      origin: config.corsOrigins.includes('*') ? true : config.corsOrigins,
      methods: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
      allowedHeaders: ['authorization', 'content-type', 'x-api-key', 'x-correlation-id', 'x-tenant-id', 'x-priority', 'x-switchboard-provider', 'anthropic-version', 'anthropic-beta', 'openai-organization'],
      exposedHeaders: ['x-correlation-id', 'x-queue-wait-ms', 'x-switchboard-model', 'x-switchboard-fallback', 'retry-after', 'x-backoff-ms', 'x-ratelimit-limit-requests', 'x-ratelimit-remaining-requests', 'x-ratelimit-reset-requests', 'x-ratelimit-limit-tokens', 'x-ratelimit-remaining-tokens', 'x-ratelimit-reset-tokens'],
      maxAge: 600,
    });
  }
  await app.listen(config.listenPort, config.listenHost);
  const queueLens = app.get(ProvidersService).list().map((p) => p.maxQueueLen);
  const fdWarning = openFilesWarning(readSoftOpenFilesLimit(), queueLens);
  if (fdWarning) new Logger('Boot').warn(fdWarning);
  return app;
}
