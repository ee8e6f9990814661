import 'reflect-metadata';
import { readFileSync } from 'node:fs';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyInstance } from 'fastify';
import type { DestinationStream } from 'pino';
import { AppConfig } from './config';
import { AppModule } from './app.module';
import { registerCorrelationId } from './observability/correlation-id';
import { WorkerWsAdapter } from './worker-link/worker-ws.adapter';
import { AppLogger, createLogger, LogFormat, registerAppLogger } from './observability/logger';
import { registerAccessLog } from './observability/access-log';
import { openFilesWarning, readSoftOpenFilesLimit } from './observability/open-files';
import { appVersion } from './observability/app-version';
import { bootSummary } from './observability/boot-summary';
import { MetricsListener } from './health/metrics-listener';
import { ProvidersService } from './providers/providers.service';
import { setupOpenApi } from './openapi/openapi.setup';
import { answerBadHeaderCharacters } from './auth/header-characters';
import { registerConnectionLimits } from './http/connection-limits';
import { readBodiesWithoutBind } from './http/body-reader-scope';
import { closeConnectionsOnClose } from './control-plane/close-connections';

export interface CreateAppOptions {
  /** Log format (default `json`; `main.ts` resolves LOG_FORMAT). */
  logFormat?: LogFormat;
  /** Colour the pretty format's levels. */
  logColor?: boolean;
  /** Where log lines go (default stdout); tests capture them. */
  logDestination?: DestinationStream;
}

/** The listening socket could not be opened (port in use, no permission, no such address). */
export class ListenError extends Error {
  constructor(
    readonly address: string,
    readonly code: string | undefined,
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(`cannot listen on ${address}: ${reason}`, options);
    this.name = 'ListenError';
  }
}

const LISTEN_REASONS: Record<string, string> = {
  EADDRINUSE: 'address already in use',
  EACCES: 'permission denied (ports below 1024 need privileges)',
  EADDRNOTAVAIL: 'address not available on this host',
};

/**
 * Builds and starts the gateway on config.listenHost:config.listenPort (port 0 = any free port).
 * Shared by `main.ts` and the integration tests, so both get identical wiring.
 */
export async function createApp(config: AppConfig, options: CreateAppOptions = {}): Promise<NestFastifyApplication> {
  const adapter = new FastifyAdapter(serverOptions(config));
  // With TLS the server is HTTP/2-capable; the hooks below only use what both kinds share.
  const fastify = adapter.getInstance() as unknown as FastifyInstance;
  // Inference bodies are forwarded to workers unmodified, so every body is kept as the raw string;
  // handlers parse what they need and answer malformed JSON in the caller's dialect.
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('*', { parseAs: 'string' }, (_req, body, done) => done(null, body));
  // The same body reading without Fastify's per-request AsyncResource.bind (src/http/body-reader-scope.ts).
  readBodiesWithoutBind(fastify);
  const logger = createLogger(config.logLevel, options.logDestination, { format: options.logFormat ?? 'json', color: options.logColor });
  registerAppLogger(config, logger);
  registerCorrelationId(fastify);
  registerConnectionLimits(fastify, config);
  registerAccessLog(fastify, logger);
  answerBadHeaderCharacters(fastify.server);
  // close() ends with the last response, not when clients hang up (an unused browser connection held it).
  closeConnectionsOnClose(fastify);

  const app = await NestFactory.create<NestFastifyApplication>(AppModule.forRoot(config), adapter, {
    logger,
    abortOnError: false,
    bodyParser: false,
  });
  app.useWebSocketAdapter(new WorkerWsAdapter(app));
  setupOpenApi(app, config);
  if (config.corsOrigins.length > 0) {
    // Off unless configured: browsers on the listed origins may call the API and read these headers.
    app.enableCors({
      origin: config.corsOrigins.includes('*') ? true : config.corsOrigins,
      methods: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
      allowedHeaders: [
        'authorization',
        'content-type',
        'x-api-key',
        'x-correlation-id',
        'x-tenant-id',
        'x-priority',
        'x-cache-mode',
        'x-cache-tag',
        'last-event-id',
        'x-switchboard-provider',
        'anthropic-version',
        'anthropic-beta',
        'openai-organization',
      ],
      exposedHeaders: [
        'x-correlation-id',
        'x-queue-wait-ms',
        'x-cache-hit',
        'x-cache-tokens-reused',
        'x-gpu-time-ms',
        'x-switchboard-model',
        'x-switchboard-fallback',
        'retry-after',
        'x-backoff-ms',
        'x-ratelimit-limit-requests',
        'x-ratelimit-remaining-requests',
        'x-ratelimit-reset-requests',
        'x-ratelimit-limit-tokens',
        'x-ratelimit-remaining-tokens',
        'x-ratelimit-reset-tokens',
        'x-budget-remaining-tokens',
        'location',
      ],
      maxAge: 600,
    });
  }
  await listen(app, config, logger);
  if (config.metricsEnabled && config.metricsPort !== undefined) await listenForMetrics(app, config);

  const providers = app.get(ProvidersService).list();
  const address = app.getHttpServer().address();
  const port = typeof address === 'object' && address ? address.port : config.listenPort;
  const summary = bootSummary(config, { host: config.listenHost, port }, providers, appVersion());
  logger.child({ context: 'Boot' }).pino.info(summary.fields, summary.message);
  const fdWarning = openFilesWarning(
    readSoftOpenFilesLimit(),
    providers.map((p) => p.maxQueueLen),
  );
  if (fdWarning) new Logger('Boot').warn(fdWarning);
  return app;
}

/**
 * Initialises the app, then opens the socket. A socket error becomes a ListenError with one
 * clear message (Nest's own error line for it is muted), and the app is closed again.
 */
async function listen(app: NestFastifyApplication, config: AppConfig, logger: AppLogger): Promise<void> {
  await app.init();
  const unmute = logger.muteWhile((level, context) => level === 'error' && context === 'NestApplication');
  try {
    await app.listen(config.listenPort, config.listenHost);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const host = config.listenHost.includes(':') ? `[${config.listenHost}]` : config.listenHost;
    const reason = (code && LISTEN_REASONS[code]) ?? (e as Error).message;
    // Nothing was served yet: close quietly (database, timers) so the caller decides what to print.
    const unmuteAll = logger.muteWhile(() => true);
    await app.close().catch(() => undefined);
    unmuteAll();
    throw new ListenError(`${host}:${config.listenPort}`, code, reason, { cause: e });
  } finally {
    unmute();
  }
}

/** `METRICS_PORT`: /metrics on its own listener; a port that cannot be opened fails the start like LISTEN_ADDR's. */
async function listenForMetrics(app: NestFastifyApplication, config: AppConfig): Promise<void> {
  try {
    const port = await app.get(MetricsListener).start(config.listenHost, config.metricsPort!);
    new Logger('Boot').log(`GET /metrics served on port ${port} (METRICS_PORT), not on the client port`);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    await app.close().catch(() => undefined);
    throw new ListenError(`${config.listenHost}:${config.metricsPort} (METRICS_PORT)`, code, (code && LISTEN_REASONS[code]) ?? (e as Error).message, {
      cause: e,
    });
  }
}

/**
 * Plain HTTP/1.1, or with TLS files HTTPS serving HTTP/2 and falling back to HTTP/1.1 on the same
 * port (clients that do not negotiate h2 by ALPN, and the workers' WebSocket upgrades).
 */
function serverOptions(config: AppConfig): ConstructorParameters<typeof FastifyAdapter>[0] {
  const base = { bodyLimit: config.maxBodyBytes, logger: false };
  if (!config.tls) return base;
  const https = { allowHTTP1: true, cert: readFileSync(config.tls.certFile), key: readFileSync(config.tls.keyFile) };
  return { ...base, http2: true, https } as unknown as ConstructorParameters<typeof FastifyAdapter>[0];
}
