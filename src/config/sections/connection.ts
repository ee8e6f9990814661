import { Env, Reader, TIMER } from '../../common/config-reader';
import { group, num, read, secs } from '../setting';

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

/** Top-level keys, read with the top-level reader (so their YAML keys are known keys). */
export const CONNECTION_SETTINGS = group('', 'connections', {
  requestTimeout: secs({
    env: 'HTTP_REQUEST_TIMEOUT_SECS',
    yaml: 'http_request_timeout_secs',
    default: 60,
    opts: TIMER,
    reload: 'restart',
    fields: ['requestTimeoutMs'],
    doc: 'a client must send its whole request (headers and body) within this, else the connection is closed (`408` when nothing was answered yet). Covers receiving the request only: streamed responses and worker WebSockets are never cut by it. Checked about every second ([security.md](security.md#connections-timeouts-caps-worker-handshake-response-headers))',
  }),
  headersTimeout: secs({
    env: 'HTTP_HEADERS_TIMEOUT_SECS',
    yaml: 'http_headers_timeout_secs',
    default: 20,
    opts: TIMER,
    reload: 'restart',
    fields: ['headersTimeoutMs'],
    doc: 'a client must send its request headers within this (at most `HTTP_REQUEST_TIMEOUT_SECS`)',
  }),
  keepAliveTimeout: secs({
    env: 'HTTP_KEEP_ALIVE_TIMEOUT_SECS',
    yaml: 'http_keep_alive_timeout_secs',
    default: 72,
    opts: TIMER,
    reload: 'restart',
    fields: ['keepAliveTimeoutMs'],
    doc: "an idle keep-alive client connection is closed after this long without a new request (longer than common load balancers' idle timeouts, so they close first)",
  }),
  maxClientConnections: num({
    env: 'MAX_CLIENT_CONNECTIONS',
    yaml: 'max_client_connections',
    default: 10_000,
    opts: { min: 0, integer: true },
    reload: 'restart',
    fields: ['maxClientConnections'],
    doc: 'concurrent client connections (not upgraded to WebSocket: connected workers never count); beyond it a request is answered `503 too_many_connections` with `Connection: close`, while workers can still connect. `0` = no cap. Keep it below the [open-files limit](deployment.md#open-files) minus the workers',
  }),
  workerRegisterFrameBytes: num({
    env: 'WORKER_REGISTER_FRAME_BYTES',
    yaml: 'worker_register_frame_bytes',
    default: 64 * 1024,
    opts: { min: 1024, integer: true },
    reload: 'restart',
    fields: ['workerRegisterFrameBytes'],
    doc: "base of the cap on a WebSocket frame a worker may send before it has registered (its `register` included): the cap for a connection is this **plus 256 bytes per model** its provider's `max_models` allows (at most 1 024 models, so at most this + 256 KiB; never above `MAX_WORKER_FRAME_BYTES`), so a valid `register` of that many models with capability hints always fits; a worker naming an unknown provider gets this base only. Larger closes `1009`",
  }),
  maxWorkerFrameBytes: num({
    env: 'MAX_WORKER_FRAME_BYTES',
    yaml: 'max_worker_frame_bytes',
    default: 100 * 1024 * 1024,
    opts: { min: 1024, integer: true },
    reload: 'restart',
    fields: ['maxWorkerFrameBytes'],
    doc: 'largest frame a registered worker may send (a non-streaming response arrives in one frame unless the worker splits it); larger closes `1009`',
  }),
});
const S = CONNECTION_SETTINGS.settings;

/** Reads the connection settings with the top-level reader (so their YAML keys are known keys). */
export function readConnectionConfig(r: Reader, env: Env, problems: string[]): ConnectionConfig {
  const config: ConnectionConfig = {
    requestTimeoutMs: read(r, env, S.requestTimeout),
    headersTimeoutMs: read(r, env, S.headersTimeout),
    keepAliveTimeoutMs: read(r, env, S.keepAliveTimeout),
    maxClientConnections: read(r, env, S.maxClientConnections),
    workerRegisterFrameBytes: read(r, env, S.workerRegisterFrameBytes),
    maxWorkerFrameBytes: read(r, env, S.maxWorkerFrameBytes),
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
