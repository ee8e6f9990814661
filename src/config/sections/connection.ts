import { Reader, TIMER } from '../../common/config-reader';

/** Limits on client connections and on the worker socket (docs/security.md, "Connections"). */
export interface ConnectionConfig {
  /** Whole request (headers and body) must arrive within this; 0 never happens (validated > 0). */
  requestTimeoutMs: number;
  /** Request headers must arrive within this (at most `requestTimeoutMs`). */
  headersTimeoutMs: number;
  /** An idle keep-alive connection between requests is closed after this. */
  keepAliveTimeoutMs: number;
  /** Concurrent client (non-upgraded HTTP) connections; 0 = no cap. Worker WebSockets never count. */
  maxClientConnections: number;
  /**
   * Largest frame a worker may send before it has registered, apart from its model list: the cap
   * for a connection is this plus 256 bytes per model its provider's `max_models` allows
   * (worker-link/register-frame-cap.ts), so a valid register always fits.
   */
  workerRegisterFrameBytes: number;
  /** Largest frame a registered worker may send (a non-streaming response arrives in one frame). */
  maxWorkerFrameBytes: number;
}

/** Reads the connection settings with the top-level reader (so their YAML keys are known keys). */
export function readConnectionConfig(r: Reader, problems: string[]): ConnectionConfig {
  const config: ConnectionConfig = {
    requestTimeoutMs: r.seconds('HTTP_REQUEST_TIMEOUT_SECS', 'http_request_timeout_secs', 60, TIMER),
    headersTimeoutMs: r.seconds('HTTP_HEADERS_TIMEOUT_SECS', 'http_headers_timeout_secs', 20, TIMER),
    keepAliveTimeoutMs: r.seconds('HTTP_KEEP_ALIVE_TIMEOUT_SECS', 'http_keep_alive_timeout_secs', 72, TIMER),
    maxClientConnections: r.number('MAX_CLIENT_CONNECTIONS', 'max_client_connections', 10_000, { min: 0, integer: true }),
    workerRegisterFrameBytes: r.number('WORKER_REGISTER_FRAME_BYTES', 'worker_register_frame_bytes', 64 * 1024, { min: 1024, integer: true }),
    maxWorkerFrameBytes: r.number('MAX_WORKER_FRAME_BYTES', 'max_worker_frame_bytes', 100 * 1024 * 1024, { min: 1024, integer: true }),
  };
  // Node refuses a headers timeout above the request timeout: say so by name instead.
  if (config.headersTimeoutMs > config.requestTimeoutMs) {
    problems.push('HTTP_HEADERS_TIMEOUT_SECS must not exceed HTTP_REQUEST_TIMEOUT_SECS');
  }
  if (config.workerRegisterFrameBytes > config.maxWorkerFrameBytes) {
    problems.push('WORKER_REGISTER_FRAME_BYTES must not exceed MAX_WORKER_FRAME_BYTES');
  }
  return config;
}
