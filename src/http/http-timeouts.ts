import type { ConnectionConfig } from '../config/sections/connection';

/** The server fields Node's HTTP/1.1 servers (and HTTP/2 servers with allowHTTP1) read. */
export interface TimeoutServer {
  headersTimeout: number;
  requestTimeout: number;
  keepAliveTimeout?: number;
  connectionsCheckingInterval: number;
}

/**
 * Header, whole-request and keep-alive idle timeouts on the listening server. Node's request and
 * headers timeouts cover RECEIVING a request only: a connection leaves Node's watch list once its
 * request is complete, so long SSE responses and upgraded worker WebSockets are never cut by
 * them. No socket-inactivity timeout (Fastify's `connectionTimeout`) is set, because it would cut
 * a quiet stream. Node looks for expired requests only every `connectionsCheckingInterval`
 * (30 s by default); a shorter period makes them fire within about a second of their deadline.
 * Must run before `listen` (the interval is armed on 'listening').
 */
export function applyHttpTimeouts(server: TimeoutServer, config: ConnectionConfig): void {
  server.headersTimeout = config.headersTimeoutMs;
  server.requestTimeout = config.requestTimeoutMs;
  server.keepAliveTimeout = config.keepAliveTimeoutMs;
  server.connectionsCheckingInterval = checkingIntervalMs(config);
}

/** A quarter of the shortest deadline, between 250 ms and 1 s: cheap (it walks only connections mid-request). */
export function checkingIntervalMs(config: Pick<ConnectionConfig, 'headersTimeoutMs' | 'requestTimeoutMs'>): number {
  return Math.max(250, Math.min(1000, Math.floor(Math.min(config.headersTimeoutMs, config.requestTimeoutMs) / 4)));
}
