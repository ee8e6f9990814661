import type { Agent } from 'node:http';
import WebSocket from 'ws';
import { ServerToWorkerMessage, parseServerMessage } from '../../protocol';
import { Clock, TimerHandle } from '../clock';
import { Logger } from '../logger';
import { ProxySettings, proxyFor } from '../network/proxy-env';
import { TlsTrust } from '../network/tls-trust';
import { TunnelAgent } from '../network/tunnel-agent';
import { logClose, logSocketError } from './close-log';
import { ReconnectDelay, ReconnectPolicy } from './reconnect-policy';
import { LinkSession } from './session';

export interface LinkOptions {
  /** The gateway's connect URL (the first one when `urls` names several). */
  url: string;
  /**
   * Every gateway replica's connect URL (`connectUrls(config)`), tried in turn: the link moves to
   * the next after each close or refused dial, round robin, with the usual backoff between dials.
   * Unset or a single URL: `url` alone, exactly as before (a load balancer in front of the replicas).
   */
  urls?: readonly string[];
  workerSecret: string;
  heartbeatIntervalMs: number;
  proxy: ProxySettings;
  tls: TlsTrust;
}

/** What the link tells the daemon. Called in this order around a close: ended, then disconnected. */
export interface LinkHooks {
  opened(session: LinkSession): void;
  message(session: LinkSession, message: ServerToWorkerMessage): void;
  /** The link is gone, before the close is logged: drop what belonged to it. */
  ended(session: LinkSession): void;
  disconnected(session: LinkSession, code: number, reason: string): void;
  reconnectScheduled(delay: ReconnectDelay): void;
  /** A scheduled reconnect is due. */
  reconnect(): void;
  /** The worker is stopping (a plain close is then expected). */
  stopping(): boolean;
}

export type SocketFactory = (url: string, options: WebSocket.ClientOptions) => WebSocket;

/**
 * The WebSocket session with the gateway: dial (through a proxy tunnel when one applies), parse
 * frames, watch for silence (heartbeat), and schedule reconnects with backoff. It knows nothing
 * of requests or models: the daemon reacts to its hooks.
 */
export class GatewayLink {
  private session?: LinkSession;
  private reconnectTimer?: TimerHandle;
  private readonly urls: readonly string[];
  /** The entry of `urls` the next dial uses. */
  private index = 0;

  constructor(
    private readonly options: LinkOptions,
    private readonly policy: ReconnectPolicy,
    private readonly hooks: LinkHooks,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly openSocket: SocketFactory = (url, opts) => new WebSocket(url, opts),
  ) {
    this.urls = options.urls && options.urls.length > 0 ? options.urls : [options.url];
  }

  /** The gateway URL the next dial goes to. */
  get url(): string {
    return this.urls[this.index];
  }

  /** The session of the current connection attempt, open or not yet. */
  get current(): LinkSession | undefined {
    return this.session;
  }

  /** Opens a connection; if that cannot even be tried, logs why and schedules the next attempt. */
  dial(): void {
    const { url } = this;
    this.log.debug('connecting', { url });
    let ws: WebSocket;
    try {
      ws = this.openSocket(url, {
        headers: { 'x-worker-secret': this.options.workerSecret, 'user-agent': 'switchboard-worker' },
        handshakeTimeout: 10_000,
        agent: this.gatewayAgent(url),
        ca: this.options.tls.ca,
        rejectUnauthorized: this.options.tls.rejectUnauthorized,
      });
    } catch (err) {
      // ws throws synchronously for what it cannot even try (e.g. a secret with characters HTTP
      // headers cannot carry). Inside an async caller that would be an unhandled rejection.
      this.log.error('cannot open the gateway connection', {
        error: (err as Error).message,
        hint: 'check that WORKER_SECRET holds only printable ASCII and that PROXY_URL is valid',
      });
      this.moveOn();
      return this.scheduleReconnect();
    }
    const session = new LinkSession(ws, this.clock);
    this.session = session;

    ws.on('open', () => {
      session.openedAt = this.clock.now();
      this.hooks.opened(session);
    });
    ws.on('message', (data, isBinary) => this.onFrame(session, data as Buffer, isBinary));
    ws.on('ping', () => this.armIdleTimer(session));
    ws.on('pong', () => this.armIdleTimer(session));
    ws.on('error', (err) => logSocketError(this.log, err));
    ws.on('close', (code, reason) => this.onClose(session, code, reason.toString('utf8')));
  }

  /** No frame (or WebSocket ping) for 3 heartbeat intervals: the link is dead even if TCP says otherwise. */
  armIdleTimer(session: LinkSession): void {
    if (session.closed) return;
    const limitMs = this.options.heartbeatIntervalMs * 3;
    session.setTimer(
      'idle',
      () => {
        this.log.warn('nothing heard from the gateway; reconnecting', { silent_for_ms: limitMs });
        session.terminate();
      },
      limitMs,
    );
  }

  registered(): void {
    this.policy.registered();
  }

  scheduleReconnect(): void {
    const delay = this.policy.next();
    this.log.info(delay.restarting ? 'reconnecting to the restarting gateway' : 'reconnecting after backoff', {
      delay_ms: delay.delayMs,
      attempt: delay.attempt,
    });
    this.arm(delay);
  }

  scheduleCordonRetry(): void {
    const delay = this.policy.nextAfterCordon();
    this.log.warn('waiting for an operator to lift the cordon before reconnecting', { delay_ms: delay.delayMs, attempt: delay.attempt });
    this.arm(delay);
  }

  cancelReconnect(): void {
    if (this.reconnectTimer) this.clock.clearTimeout(this.reconnectTimer);
  }

  private arm(delay: ReconnectDelay): void {
    this.hooks.reconnectScheduled(delay);
    this.reconnectTimer = this.clock.setTimeout(() => this.hooks.reconnect(), delay.delayMs);
  }

  /**
   * With several gateways, the next dial goes to the next one: a replica that closed or refused
   * is likely gone or restarting, another one likely answers (the backoff still spaces the dials).
   */
  private moveOn(): void {
    if (this.urls.length < 2 || this.hooks.stopping()) return;
    this.index = (this.index + 1) % this.urls.length;
    this.log.info('moving to the next gateway', { url: this.url });
  }

  /** A CONNECT tunnel when a proxy applies to the gateway URL; ws dials directly otherwise. */
  private gatewayAgent(url: string): Agent | undefined {
    const target = new URL(url);
    const proxy = proxyFor(target, this.options.proxy);
    if (!proxy) return undefined;
    return new TunnelAgent({ proxy, secure: target.protocol === 'wss:', tls: this.options.tls });
  }

  private onFrame(session: LinkSession, data: Buffer, isBinary: boolean): void {
    if (session.closed) return;
    this.armIdleTimer(session);
    let message: ServerToWorkerMessage;
    try {
      if (isBinary) throw new Error('binary frame');
      message = parseServerMessage(data.toString('utf8'));
    } catch (err) {
      // The frame may carry prompts and client credentials: log its size, never its content.
      this.log.error('unparseable frame from the gateway; reconnecting', {
        error: (err as Error).message,
        frame_bytes: data.length,
      });
      session.close(1002, 'unparseable server frame');
      return;
    }
    this.hooks.message(session, message);
  }

  private onClose(session: LinkSession, code: number, reason: string): void {
    if (session.closed) return;
    session.closed = true;
    session.clearTimers();
    session.operations.abort();
    if (this.session === session) this.session = undefined;
    this.hooks.ended(session);
    this.policy.sessionEnded(code, session.openedAt);
    logClose(this.log, code, reason, {
      expected: session.draining || this.hooks.stopping(),
      cordonRetryMs: this.policy.cordonRetryMs,
      cordonRetryMaxMs: this.policy.cordonRetryMaxMs,
    });
    // Before the daemon schedules the next dial, so that dial goes to the next gateway.
    this.moveOn();
    this.hooks.disconnected(session, code, reason);
  }
}
