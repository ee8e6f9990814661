import { RegisterAckMessage } from '../protocol';
import { Clock } from './clock';
import type { SocketFactory } from './link/gateway-link';
import { Logger } from './logger';

export interface WorkerDaemonOptions {
  logger?: Logger;
  /** Time source for every timer of the daemon and its parts. Default: the real clock (timers not unref'd). */
  clock?: Clock;
  /** How the gateway WebSocket is created (a seam for unit specs). Default: a `ws` client. */
  openSocket?: SocketFactory;
  /** A session that lasted this long resets the reconnect backoff. Default 30 s. */
  stableSessionMs?: number;
  /** Time limit for the backend's GET /v1/models. Default 5 s. */
  modelsTimeoutMs?: number;
  /** Extra wait after a graceful_shutdown deadline before the worker closes the link itself. Default 5 s. */
  drainGraceMs?: number;
  /** How often the backend's runner document (`GET /v1/capabilities`) is read again; sent only when it changed. Default 5 s; 0 = never. */
  runnerRefreshMs?: number;
  /** Time limit of each backend probe request; a whole probing round gets twice this. Default 2 s. */
  probeTimeoutMs?: number;
  /** First reconnect delay after the gateway closed with 1012 (restarting), plus up to 25 % jitter. Default 1 s. */
  restartReconnectMs?: number;
  /** Largest delay while a restarting gateway is not back yet. Default 3 s. */
  restartReconnectMaxMs?: number;
  /** How long to keep retrying at the short restart interval before falling back to the normal backoff. Default 2 min. */
  restartWindowMs?: number;
  /**
   * After the gateway refused this worker with 1013 (cordoned: its pool or worker name is drained
   * by an operator), wait between this and `cordonRetryMaxMs` (uniform jitter) before trying again.
   * Default 30 s.
   */
  cordonRetryMs?: number;
  /** Upper bound of the wait after a 1013 refusal. Default 60 s. */
  cordonRetryMaxMs?: number;
  userAgent?: string;
  random?: () => number;
  /** Pause between two polls of the backend while a lifecycle operation runs. Default 1 s. */
  lifecyclePollMs?: number;
  /** At most one `loading` report per this interval. Default 1 s. */
  lifecycleProgressIntervalMs?: number;
  /** Time limit of each backend request a lifecycle operation makes. Default 30 s. */
  lifecycleRequestTimeoutMs?: number;
}

export type DaemonState = 'idle' | 'connecting' | 'connected' | 'waiting_to_reconnect' | 'stopping' | 'stopped';

export interface DaemonStatus {
  state: DaemonState;
  /** Gateway asked this worker to drain (graceful_shutdown) on the current connection. */
  draining: boolean;
  /** Requests assigned by the gateway and not yet answered (running + queued locally). */
  currentLoad: number;
  runningRequests: number;
  queuedRequests: number;
  models: string[];
  workerId?: string;
}

export interface DisconnectInfo {
  code: number;
  reason: string;
}

export interface DaemonEvents {
  connected: [];
  registered: [ack: RegisterAckMessage];
  disconnected: [info: DisconnectInfo];
  reconnect_scheduled: [info: { delayMs: number; attempt: number }];
  draining: [info: { source: 'gateway' | 'signal'; reason?: string }];
  exit: [code: number];
}
