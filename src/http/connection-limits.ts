import type { FastifyInstance } from 'fastify';
import type { AppConfig } from '../config';
import { ClientConnectionCap } from './client-connection-cap';
import { applyHttpTimeouts, TimeoutServer } from './http-timeouts';
import { registerLingeringClose } from './lingering-close';
import { registerHttp2RequestTimeout } from './http2-request-timeout';

/**
 * Body bytes read and discarded after an early answer (a 413) before the connection closes: twice
 * the body limit, at least 8 MiB. Costs bandwidth only (nothing is kept), and the linger is
 * bounded in time too.
 */
export function discardBytesFor(maxBodyBytes: number): number {
  return Math.max(2 * maxBodyBytes, 8 * 1024 * 1024);
}

/**
 * Timeouts, the client connection cap and the lingering close of early answers, on the server
 * Fastify created (before it listens). See docs/security.md, "Connections".
 */
export function registerConnectionLimits(fastify: FastifyInstance, config: AppConfig): ClientConnectionCap | undefined {
  applyHttpTimeouts(fastify.server as unknown as TimeoutServer, config.connections);
  registerLingeringClose(fastify, discardBytesFor(config.maxBodyBytes));
  if (config.tls) registerHttp2RequestTimeout(fastify, config.connections.requestTimeoutMs);
  if (config.connections.maxClientConnections === 0) return undefined;
  const cap = new ClientConnectionCap(config.connections.maxClientConnections);
  cap.attach(fastify.server);
  cap.register(fastify);
  return cap;
}
