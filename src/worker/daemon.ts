import { EventEmitter } from 'node:events';
import type { Agent } from 'node:http';
import WebSocket from 'ws';
import {
  CancelMessage,
  CloseCodes,
  CloseReasons,
  GracefulShutdownMessage,
  LifecycleCommandMessage,
  ModelCapabilities,
  PROTOCOL_VERSION,
  RegisterAckMessage,
  RequestMessage,
  ServerToWorkerMessage,
  WorkerToServerMessage,
  encodeMessage,
  parseServerMessage,
  Features,
} from '../protocol';
import { BackendClient } from './backend-client';
import { Backoff } from './backoff';
import { WorkerConfig, WorkerConfigError, connectUrl } from './config';
import { checkEndpoint } from './guard/endpoint-path';
import { LifecycleHttp } from './lifecycle/backend-http';
import { LifecycleDispatcher } from './lifecycle/dispatcher';
import { AdapterChoice, chooseAdapter, createAdapter } from './lifecycle/select';
import { LifecycleAdapter } from './lifecycle/types';
import { Logger, silentLogger } from './logger';
import { ProxySettings, describeProxy, proxyFor } from './network/proxy-env';
import { TlsTrust, tlsTrust } from './network/tls-trust';
import { TunnelAgent } from './network/tunnel-agent';
import { BackendProber, ProbeResult } from './probes/backend-prober';
import { CompleteParts, ErrorCodes, ResponseSink, runBackendRequest } from './request-runner';

export interface WorkerDaemonOptions {
  logger?: Logger;
  /** A session that lasted this long resets the reconnect backoff. Default 30 s. */
  stableSessionMs?: number;
  /** Time limit for the backend's GET /v1/models. Default 5 s. */
  modelsTimeoutMs?: number;
  /** Extra wait after a graceful_shutdown deadline before the worker closes the link itself. Default 5 s. */
  drainGraceMs?: number;
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

/** Frames bigger than this waiting in the socket buffer pause the backend stream. */
const SEND_HIGH_WATER_BYTES = 1 << 20;

const DRAINING_BODY = JSON.stringify({
  error: {
    message: 'This worker is shutting down and accepts no new requests.',
    type: 'service_unavailable',
    code: 'worker_draining',
  },
});
const AT_CAPACITY_BODY = JSON.stringify({
  error: {
    message: 'This worker is at its max_concurrency and its local queue is full.',
    type: 'service_unavailable',
    code: 'worker_at_capacity',
  },
});

/** One WebSocket connection and the timers that belong to it. */
class Session {
  openedAt?: number;
  closed = false;
  draining = false;
  workerId?: string;
  /**
   * The endpoint list last advertised on this link (register, then each models_update that
   * carries one, as the gateway reads it); undefined = none sent = every inference endpoint.
   * Requests for anything else are refused without touching the backend.
   */
  advertisedEndpoints?: string[];
  /** Protocol extensions the gateway accepted in register_ack (none until then). */
  features: ReadonlySet<string> = new Set();
  /** Aborted when the link closes: the lifecycle operations it asked for have nobody to report to. */
  readonly operations = new AbortController();
  idleTimer?: NodeJS.Timeout;
  pollTimer?: NodeJS.Timeout;
  drainTimer?: NodeJS.Timeout;
  closeTimer?: NodeJS.Timeout;

  constructor(readonly ws: WebSocket) {}

  get open(): boolean {
    return !this.closed && this.ws.readyState === WebSocket.OPEN;
  }

  clearTimers(): void {
    for (const t of [this.idleTimer, this.pollTimer, this.drainTimer, this.closeTimer]) if (t) clearTimeout(t);
  }
}

/** One request the gateway assigned to this worker. */
interface Task {
  request: RequestMessage;
  session: Session;
  controller: AbortController;
  state: 'queued' | 'running';
  /** The gateway got its final answer (complete, error or 499); nothing more is sent for it. */
  settled: boolean;
  /** At least one response_chunk went out: the gateway can no longer hand the request to another worker. */
  sentChunks: boolean;
}

/**
 * The worker: dials the gateway, registers, relays requests to the backend and keeps the link
 * alive (heartbeat watchdog, reconnect with backoff) until `stop()` or a drain with exitOnDrain.
 */
export class WorkerDaemon extends EventEmitter<DaemonEvents> {
  private state: DaemonState = 'idle';
  private session?: Session;
  private readonly tasks = new Map<string, Task>();
  private readonly queue: Task[] = [];
  private running = 0;
  private models: string[];
  private readonly backend: BackendClient;
  private readonly backoff: Backoff;
  private readonly log: Logger;
  private reconnectTimer?: NodeJS.Timeout;
  private stopTimer?: NodeJS.Timeout;
  private stopping = false;
  /** Aborted on stop: interrupts a models lookup that is holding up a connect. */
  private readonly lifecycle = new AbortController();
  private resolveExit!: (code: number) => void;
  private readonly exited = new Promise<number>((resolve) => (this.resolveExit = resolve));
  private readonly stableSessionMs: number;
  private readonly modelsTimeoutMs: number;
  private readonly drainGraceMs: number;
  private readonly restartBackoff: Backoff;
  private readonly restartWindowMs: number;
  private readonly cordonRetryMs: number;
  private readonly cordonRetryMaxMs: number;
  /** Refusals with 1013 in a row (reset once registered). */
  private cordonRefusals = 0;
  private readonly random: () => number;
  /** Set by a 1012 close: retry at the short restart interval until registered (or the window ends). */
  private restartingSince?: number;
  private readonly prober?: BackendProber;
  private probed?: ProbeResult;
  private readonly proxy: ProxySettings;
  private readonly tls: TlsTrust;
  private readonly lifecycleHttp: LifecycleHttp;
  private readonly dispatcher: LifecycleDispatcher;
  /** The lifecycle adapter for the backend as last identified (rebuilt when that changes). */
  private adapterCache?: { key: string; adapter: LifecycleAdapter };

  constructor(
    private readonly config: WorkerConfig,
    options: WorkerDaemonOptions = {},
  ) {
    super();
    this.log = options.logger ?? silentLogger;
    this.models = config.discoverModels ? [] : [...config.models];
    this.proxy = { httpProxy: config.httpProxy, httpsProxy: config.httpsProxy, noProxy: config.noProxy };
    try {
      this.tls = tlsTrust(config);
    } catch (err) {
      // A CA file that cannot be read is a configuration problem (exit 2), not a crash.
      throw new WorkerConfigError([(err as Error).message]);
    }
    this.backend = new BackendClient(config.backendUrl, {
      apiKey: config.backendApiKey,
      userAgent: options.userAgent ?? 'switchboard-worker',
      proxy: this.proxy,
      tls: this.tls,
    });
    this.backoff = new Backoff({ minMs: config.reconnectMinMs, maxMs: config.reconnectMaxMs, random: options.random });
    this.restartBackoff = new Backoff({
      minMs: options.restartReconnectMs ?? 1_000,
      maxMs: options.restartReconnectMaxMs ?? 3_000,
      jitter: 0.25,
      random: options.random,
    });
    this.restartWindowMs = options.restartWindowMs ?? 120_000;
    this.cordonRetryMs = options.cordonRetryMs ?? 30_000;
    this.cordonRetryMaxMs = Math.max(this.cordonRetryMs, options.cordonRetryMaxMs ?? 60_000);
    this.random = options.random ?? Math.random;
    this.stableSessionMs = options.stableSessionMs ?? 30_000;
    this.modelsTimeoutMs = options.modelsTimeoutMs ?? 5_000;
    this.drainGraceMs = options.drainGraceMs ?? 5_000;
    if (config.probe) this.prober = new BackendProber(this.backend, this.log, options.probeTimeoutMs ?? 2_000);
    this.lifecycleHttp = new LifecycleHttp(this.backend, options.lifecycleRequestTimeoutMs ?? 30_000);
    this.dispatcher = new LifecycleDispatcher({
      log: this.log,
      http: this.lifecycleHttp,
      adapter: () => this.lifecycleAdapter(),
      timeoutMs: config.lifecycleTimeoutMs,
      pollMs: options.lifecyclePollMs ?? 1_000,
      progressIntervalMs: options.lifecycleProgressIntervalMs ?? 1_000,
    });
  }

  get status(): DaemonStatus {
    return {
      state: this.state,
      draining: this.session?.draining ?? false,
      currentLoad: this.currentLoad(),
      runningRequests: this.running,
      queuedRequests: this.queue.length,
      models: [...this.models],
      workerId: this.session?.workerId,
    };
  }

  /** Resolves with the process exit code once the daemon has stopped for good. */
  waitForExit(): Promise<number> {
    return this.exited;
  }

  start(): void {
    if (this.state !== 'idle') return;
    this.log.info('worker starting', {
      gateway: connectUrl(this.config),
      backend: this.config.backendUrl,
      worker_name: this.config.workerName,
      models: this.config.discoverModels ? '* (from backend)' : this.config.models,
      max_concurrency: this.config.maxConcurrency,
      priority: this.config.priority,
      probe: this.config.probe,
    });
    this.logNetworkSetup();
    void this.connect();
  }

  private logNetworkSetup(): void {
    if (this.config.insecureSkipVerify) {
      this.log.warn(
        'TLS CERTIFICATE VERIFICATION IS OFF (--insecure-skip-verify): anyone on the network path can impersonate the gateway ' +
          'and read the worker secret and every prompt. Use --ca-file with your CA instead; never run this in production.',
      );
    }
    if (this.config.caFile) this.log.info('trusting the CA certificates of --ca-file in addition to the public roots', { ca_file: this.config.caFile });
    const gatewayProxy = proxyFor(new URL(connectUrl(this.config)), this.proxy);
    if (gatewayProxy) this.log.info('gateway connection goes through a proxy (CONNECT tunnel)', { proxy: describeProxy(gatewayProxy) });
    const backendUrl = new URL(this.config.backendUrl);
    const backendProxy = proxyFor(backendUrl, this.proxy);
    if (backendProxy) {
      const loopback = ['localhost', '127.0.0.1', '[::1]'].includes(backendUrl.hostname) || backendUrl.hostname.startsWith('127.');
      const fields = { proxy: describeProxy(backendProxy), backend: backendUrl.origin };
      if (loopback) {
        this.log.warn('backend calls go through the proxy although the backend is on this host; add it to NO_PROXY unless that is intended', {
          ...fields,
          hint: `NO_PROXY=${backendUrl.hostname.replace(/^\[|\]$/g, '')},localhost,127.0.0.1`,
        });
      } else {
        this.log.info('backend calls go through a proxy', fields);
      }
    }
  }

  /**
   * Graceful stop (SIGTERM): take no new work, let in-flight requests finish within the drain
   * timeout, abort the rest (an `error` frame for those that already relayed chunks, nothing for
   * the others so the gateway requeues them), close 1000. A second call skips the wait. Resolves
   * with the exit code.
   */
  stop(): Promise<number> {
    if (this.state === 'stopped') return this.exited;
    if (this.stopping) {
      this.log.warn('second stop request: aborting in-flight requests now');
      this.abortAllForShutdown();
      return this.exited;
    }
    this.stopping = true;
    this.lifecycle.abort();
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    const session = this.session;
    if (!session || !session.open) {
      if (session && !session.closed) session.ws.terminate();
      else this.finish(0);
      return this.exited;
    }
    this.state = 'stopping';
    const inFlight = this.currentLoad();
    this.log.info('stopping: no new requests; finishing in-flight ones', {
      in_flight: inFlight,
      deadline_secs: this.config.drainTimeoutMs / 1000,
    });
    this.emit('draining', { source: 'signal' });
    // An empty model list makes the gateway route nothing more here while we finish.
    this.send(session, { type: 'models_update', models: [], current_load: inFlight });
    if (inFlight === 0) {
      this.closeForStop();
    } else {
      this.stopTimer = setTimeout(() => this.abortAllForShutdown(), this.config.drainTimeoutMs);
    }
    return this.exited;
  }

  // ---- connection lifecycle -----------------------------------------------------------------

  private async connect(): Promise<void> {
    if (this.stopping) return this.finish(0);
    this.state = 'connecting';
    const models = await this.modelsForRegister();
    if (this.stopping) return this.finish(0);

    const url = connectUrl(this.config);
    this.log.debug('connecting', { url });
    let ws: WebSocket;
    try {
      ws = new WebSocket(url, {
        headers: { 'x-worker-secret': this.config.workerSecret, 'user-agent': 'switchboard-worker' },
        handshakeTimeout: 10_000,
        agent: this.gatewayAgent(url),
        ca: this.tls.ca,
        rejectUnauthorized: this.tls.rejectUnauthorized,
      });
    } catch (err) {
      // ws throws synchronously for what it cannot even try (e.g. a secret with characters HTTP
      // headers cannot carry). Inside this async function that would be an unhandled rejection.
      this.log.error('cannot open the gateway connection', {
        error: (err as Error).message,
        hint: 'check that WORKER_SECRET holds only printable ASCII and that PROXY_URL is valid',
      });
      return this.scheduleReconnect();
    }
    const session = new Session(ws);
    this.session = session;

    ws.on('open', () => this.onOpen(session, models));
    ws.on('message', (data, isBinary) => this.onFrame(session, data as Buffer, isBinary));
    ws.on('ping', () => this.armIdleTimer(session));
    ws.on('pong', () => this.armIdleTimer(session));
    ws.on('error', (err) => this.onSocketError(err));
    ws.on('close', (code, reason) => this.onClose(session, code, reason.toString('utf8')));
  }

  /** A CONNECT tunnel when a proxy applies to the gateway URL; ws dials directly otherwise. */
  private gatewayAgent(url: string): Agent | undefined {
    const target = new URL(url);
    const proxy = proxyFor(target, this.proxy);
    if (!proxy) return undefined;
    return new TunnelAgent({ proxy, secure: target.protocol === 'wss:', tls: this.tls });
  }

  private onOpen(session: Session, models: string[]): void {
    session.openedAt = Date.now();
    this.state = this.stopping ? 'stopping' : 'connected';
    session.advertisedEndpoints = this.probed?.endpoints;
    this.send(session, {
      type: 'register',
      worker_name: this.config.workerName,
      models,
      max_concurrent: this.config.maxConcurrency,
      protocol_version: PROTOCOL_VERSION,
      current_load: this.currentLoad(),
      capabilities: this.capabilitiesFor(models),
      endpoints: this.probed?.endpoints,
      priority: this.config.priority,
      runner: this.probed?.runner,
      runner_capabilities: this.probed?.runnerCapabilities,
      features: [Features.RESPONSE_START, Features.CANCEL_REASONS, ...(this.config.modelLifecycle ? [Features.MODEL_LIFECYCLE] : [])],
    });
    this.log.info('connected to gateway; registering', { models, max_concurrent: this.config.maxConcurrency });
    this.armIdleTimer(session);
    if (this.config.discoverModels && this.config.modelsPollIntervalMs > 0) this.schedulePoll(session);
    this.emit('connected');
  }

  private onSocketError(err: Error): void {
    const code = (err as NodeJS.ErrnoException).code;
    const tlsHint = code && Object.hasOwn(TLS_HINTS, code) ? TLS_HINTS[code] : undefined;
    if (tlsHint) {
      this.log.error('TLS verification of the gateway failed', { error: err.message, code, hint: tlsHint });
      return;
    }
    let hint: string | undefined;
    if (/Unexpected server response: (404|400|426)/.test(err.message)) {
      hint = 'is PROXY_URL the Switchboard gateway (it must serve /v1/worker/connect)?';
    } else if (err.message.startsWith('proxy ')) {
      hint = 'check HTTPS_PROXY / HTTP_PROXY (and NO_PROXY for hosts that must be reached directly)';
    }
    this.log.warn('gateway connection error', { error: err.message, hint });
  }

  private onClose(session: Session, code: number, reason: string): void {
    if (session.closed) return;
    session.closed = true;
    session.clearTimers();
    session.operations.abort();
    if (this.session === session) this.session = undefined;
    this.dropTasksOf(session);

    const lastedMs = session.openedAt ? Date.now() - session.openedAt : 0;
    if (lastedMs >= this.stableSessionMs) this.backoff.reset();
    if (code === CloseCodes.SERVICE_RESTART) {
      // A planned restart is no failure: start over from a short delay, not from where backoff was.
      this.backoff.reset();
      this.restartBackoff.reset();
      this.restartingSince = Date.now();
    } else if (session.openedAt !== undefined) {
      // The gateway answered (and said something else than "restarting"): it is back.
      this.restartingSince = undefined;
    }
    this.logClose(code, reason, session);
    this.emit('disconnected', { code, reason });

    if (this.stopping) return this.finish(0);
    if (session.draining && this.config.exitOnDrain) {
      this.log.info('drained by the gateway; exiting (--exit-on-drain)');
      return this.finish(0);
    }
    if (code === CloseCodes.TRY_AGAIN_LATER) return this.scheduleCordonRetry();
    this.scheduleReconnect();
  }

  /**
   * Refused with 1013: an operator cordoned this worker's pool or name. Retrying sooner would only
   * be refused again, so wait a long, capped interval (no exponential growth, no loop) and try once.
   */
  private scheduleCordonRetry(): void {
    const attempt = ++this.cordonRefusals;
    const delayMs = Math.round(this.cordonRetryMs + (this.cordonRetryMaxMs - this.cordonRetryMs) * this.random());
    this.state = 'waiting_to_reconnect';
    this.log.warn('waiting for an operator to lift the cordon before reconnecting', { delay_ms: delayMs, attempt });
    this.emit('reconnect_scheduled', { delayMs, attempt });
    this.reconnectTimer = setTimeout(() => void this.connect(), delayMs);
  }

  /** One specific line per close the gateway can send (the reasons are part of the protocol contract). */
  private logClose(code: number, reason: string, session: Session): void {
    const fields = { code, reason: reason || undefined };
    if (code === CloseCodes.POLICY_VIOLATION && reason === CloseReasons.AUTH_RATE_LIMITED) {
      this.log.error('worker authentication temporarily rate limited: the gateway is refusing this address after too many failed attempts', {
        ...fields,
        hint:
          'another worker on this host (or behind the same NAT or proxy) may be sending a wrong secret; your own secret may be fine. ' +
          'This worker keeps retrying with backoff and gets in once the block expires',
      });
    } else if (code === CloseCodes.POLICY_VIOLATION && reason === CloseReasons.AUTH_FAILED) {
      this.log.error('worker authentication failed: the gateway rejected the secret or the provider', {
        ...fields,
        hint: 'check WORKER_SECRET and the provider name (--provider / PROVIDER_NAME): the provider must exist, be enabled and have this secret',
      });
    } else if (code === CloseCodes.POLICY_VIOLATION) {
      this.log.error('gateway rejected this worker (policy violation)', { ...fields, hint: 'check WORKER_SECRET and --provider' });
    } else if (code === CloseCodes.PROTOCOL_ERROR) {
      this.log.error('gateway reported a protocol error: it did not accept a frame from this worker', {
        ...fields,
        hint: 'usually a protocol version mismatch: run matching gateway and worker versions',
      });
    } else if (code === CloseCodes.SERVICE_RESTART) {
      this.log.info('gateway restarting: reconnecting in about a second, without backoff penalty', fields);
    } else if (code === CloseCodes.TRY_AGAIN_LATER) {
      this.log.warn('gateway refused this worker: it is cordoned (an operator drained its pool or its worker name)', {
        ...fields,
        hint:
          'nothing is wrong with this worker; it is kept out of rotation until an operator runs POST /v1/pools/<provider>/undrain ' +
          `or POST /admin/workers/<id>/undrain on the gateway. It retries every ${Math.round(this.cordonRetryMs / 1000)}-${Math.round(this.cordonRetryMaxMs / 1000)} s`,
      });
    } else if (code === CloseCodes.NORMAL && reason === CloseReasons.DRAIN_COMPLETE) {
      this.log.info('drain complete: the gateway closed the link once this worker had finished its requests', fields);
    } else if (code === CloseCodes.NORMAL && reason === CloseReasons.DRAIN_TIMED_OUT) {
      this.log.warn('drain timed out: the gateway closed the link with requests still running past its drain deadline', fields);
    } else if (code === CloseCodes.NORMAL && reason === CloseReasons.HEARTBEAT_TIMEOUT) {
      this.log.warn('heartbeat timed out: the gateway heard no pong from this worker in time', {
        ...fields,
        hint: 'network loss, an overloaded worker host, or a proxy buffering the WebSocket',
      });
    } else if (code === CloseCodes.NORMAL || session.draining || this.stopping) {
      this.log.info('gateway connection closed', fields);
    } else {
      this.log.warn('gateway connection lost', fields);
    }
  }

  private scheduleReconnect(): void {
    if (this.restartingSince !== undefined && Date.now() - this.restartingSince > this.restartWindowMs) {
      this.log.warn('the restarting gateway has not come back; falling back to the normal reconnect backoff', {
        waited_ms: Date.now() - this.restartingSince,
      });
      this.restartingSince = undefined;
    }
    const restarting = this.restartingSince !== undefined;
    const backoff = restarting ? this.restartBackoff : this.backoff;
    const attempt = backoff.attempts + 1;
    const delayMs = backoff.next();
    this.state = 'waiting_to_reconnect';
    this.log.info(restarting ? 'reconnecting to the restarting gateway' : 'reconnecting after backoff', { delay_ms: delayMs, attempt });
    this.emit('reconnect_scheduled', { delayMs, attempt });
    this.reconnectTimer = setTimeout(() => void this.connect(), delayMs);
  }

  private finish(code: number): void {
    if (this.state === 'stopped') return;
    this.state = 'stopped';
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    if (this.stopTimer) clearTimeout(this.stopTimer);
    this.session?.clearTimers();
    this.backend.close();
    this.log.info('worker stopped', { exit_code: code });
    this.emit('exit', code);
    this.resolveExit(code);
  }

  /** No frame (or WebSocket ping) for 3 heartbeat intervals: the link is dead even if TCP says otherwise. */
  private armIdleTimer(session: Session): void {
    if (session.closed) return;
    if (session.idleTimer) clearTimeout(session.idleTimer);
    const limitMs = this.config.heartbeatIntervalMs * 3;
    session.idleTimer = setTimeout(() => {
      this.log.warn('nothing heard from the gateway; reconnecting', { silent_for_ms: limitMs });
      session.ws.terminate();
    }, limitMs);
  }

  private send(session: Session, message: WorkerToServerMessage, onWritten?: () => void): boolean {
    if (!session.open) return false;
    session.ws.send(encodeMessage(message), onWritten ? () => onWritten() : undefined);
    return true;
  }

  // ---- server frames ------------------------------------------------------------------------

  private onFrame(session: Session, data: Buffer, isBinary: boolean): void {
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
      session.ws.close(1002, 'unparseable server frame');
      this.closeWatchdog(session);
      return;
    }
    switch (message.type) {
      case 'register_ack':
        return this.onRegisterAck(session, message);
      case 'request':
        return this.onRequest(session, message);
      case 'cancel':
        return this.onCancel(message);
      case 'ping':
        this.send(session, { type: 'pong', current_load: this.currentLoad(), timestamp_unix_ms: message.timestamp_unix_ms });
        return;
      case 'graceful_shutdown':
        return this.onGracefulShutdown(session, message);
      case 'models_refresh':
        void this.onModelsRefresh(session, message.reason);
        return;
      case 'model_load':
      case 'model_unload':
      case 'cache_flush':
        return this.onLifecycleCommand(session, message);
    }
  }

  private onRegisterAck(session: Session, ack: RegisterAckMessage): void {
    session.workerId = ack.worker_id;
    session.features = new Set(ack.features ?? []);
    this.restartingSince = undefined;
    this.cordonRefusals = 0;
    this.log.info('registered with the gateway', {
      worker_id: ack.worker_id,
      models: ack.models,
      runner: this.probed?.runner,
      endpoints: this.probed?.endpoints,
      priority: this.config.priority,
    });
    for (const warning of ack.warnings ?? []) this.log.warn('gateway registration warning', { warning });
    this.emit('registered', ack);
  }

  // ---- model lifecycle ----------------------------------------------------------------------

  /** Runs in the background: request relaying goes on while a model loads. */
  private onLifecycleCommand(session: Session, command: LifecycleCommandMessage): void {
    if (!session.features.has(Features.MODEL_LIFECYCLE)) {
      // The gateway did not accept the feature, so it expects no lifecycle_status either.
      this.log.warn('gateway sent a lifecycle command without negotiating model_lifecycle; ignored', { type: command.type, task_id: command.task_id });
      return;
    }
    if (this.stopping) {
      this.send(session, { type: 'lifecycle_status', task_id: command.task_id, status: 'failed', error: 'the worker is stopping' });
      return;
    }
    const link = {
      send: (message: WorkerToServerMessage) => void this.send(session, message),
      signal: AbortSignal.any([session.operations.signal, this.lifecycle.signal]),
      modelsChanged: () => this.refreshAfterLifecycle(),
    };
    void this.dispatcher.handle(command, link);
  }

  /** A load or unload changed what the backend serves: tell the gateway (routing follows this list). */
  private async refreshAfterLifecycle(): Promise<void> {
    const found = await this.fetchBackendModels();
    if (found && !sameList(found, this.models)) {
      this.log.info('backend model list changed by a lifecycle operation', { before: this.models, after: found });
    }
    if (found) this.models = found;
    await this.probeBackend(false);
    if (this.session?.open) this.sendModelsUpdate(this.session);
  }

  /** `--runner`, or what the probe detected; the adapter is rebuilt only when that changes. */
  private lifecycleAdapter(): LifecycleAdapter {
    const choice: AdapterChoice = chooseAdapter(
      this.config.runner,
      this.probed && !this.probed.unreachable ? { runner: this.probed.runner, runnerApi: this.probed.runnerCapabilities !== undefined } : undefined,
    );
    const key = `${choice.type}/${choice.how}`;
    if (this.adapterCache?.key !== key) this.adapterCache = { key, adapter: createAdapter(choice, { loraDir: this.config.loraDir }) };
    return this.adapterCache.adapter;
  }

  /** Drops the listed models the backend cannot answer now (e.g. a sleeping vLLM); on any doubt keeps them. */
  private async servableOf(models: string[]): Promise<string[]> {
    const adapter = this.lifecycleAdapter();
    if (!adapter.servable || models.length === 0) return models;
    const signal = AbortSignal.any([this.lifecycle.signal, AbortSignal.timeout(this.modelsTimeoutMs)]);
    try {
      const servable = await adapter.servable(models, this.lifecycleHttp, signal);
      if (servable.length !== models.length) {
        this.log.debug('leaving out models the backend cannot serve right now', { listed: models, servable, runner: adapter.runner });
      }
      return servable;
    } catch (err) {
      this.log.debug('could not tell which listed models the backend can serve now; keeping them all', { error: (err as Error).message });
      return models;
    }
  }

  private onGracefulShutdown(session: Session, message: GracefulShutdownMessage): void {
    if (session.draining) return;
    session.draining = true;
    this.log.warn('gateway asked this worker to drain', {
      reason: message.reason,
      drain_timeout_secs: message.drain_timeout_secs,
      in_flight: this.currentLoad(),
      then: this.config.exitOnDrain ? 'exit' : 'reconnect',
    });
    this.emit('draining', { source: 'gateway', reason: message.reason });
    // The gateway closes the link once we are idle or its deadline passes; this is only a fallback.
    const deadlineMs = (message.drain_timeout_secs ? message.drain_timeout_secs * 1000 : this.config.drainTimeoutMs) + this.drainGraceMs;
    session.drainTimer = setTimeout(() => {
      if (!session.open) return;
      this.log.warn('gateway did not close the link after its drain deadline; closing it', { in_flight: this.currentLoad() });
      session.ws.close(1000, 'drain deadline passed');
      this.closeWatchdog(session);
    }, deadlineMs);
  }

  // ---- requests -----------------------------------------------------------------------------

  private currentLoad(): number {
    let load = 0;
    for (const t of this.tasks.values()) if (!t.settled) load++;
    return load;
  }

  private onRequest(session: Session, request: RequestMessage): void {
    const id = request.request_id;
    // A settled task may still be winding down (its backend call being aborted); its id is free
    // again, and startTask's cleanup only removes the map entry if it is still its own.
    if (this.tasks.get(id)?.settled === false) {
      this.log.warn('gateway sent a request id that is already in flight; refusing the duplicate', { request_id: id });
      // No request_id on purpose: a gateway fails the request an error frame names, and the
      // first copy of this request is still running fine.
      this.send(session, {
        type: 'error',
        code: ErrorCodes.DUPLICATE_REQUEST_ID,
        message: `request ${id} is already in flight on this worker; the duplicate was ignored, the first one continues`,
      });
      return;
    }
    const endpoint = checkEndpoint(request.endpoint_path, session.advertisedEndpoints);
    if (!endpoint.ok) {
      // Never relayed, so BACKEND_API_KEY never goes with it: see guard/endpoint-path.ts.
      this.log.warn('refused a request for a path this worker does not relay', {
        request_id: id,
        path: String(request.endpoint_path).slice(0, 200),
        reason: endpoint.reason,
      });
      this.send(session, { type: 'error', request_id: id, code: ErrorCodes.ENDPOINT_NOT_ALLOWED, message: `refused by the worker: ${endpoint.reason}` });
      return;
    }
    if (this.stopping || session.draining) {
      this.log.info('refusing request while draining', { request_id: id });
      this.sendComplete(session, id, { status_code: 503, headers: { 'content-type': 'application/json' }, body: DRAINING_BODY });
      return;
    }
    // The canonical path that was checked is what goes out, not the gateway's spelling of it.
    const task: Task = { request: { ...request, endpoint_path: endpoint.path }, session, controller: new AbortController(), state: 'queued', settled: false, sentChunks: false };
    if (this.running < this.config.maxConcurrency) {
      this.tasks.set(id, task);
      this.startTask(task);
    } else if (this.queue.length < this.config.maxConcurrency) {
      // The gateway tracks our slots, so this only happens around cancels and reconnects.
      this.log.info('gateway assigned more than max_concurrency; queued locally', { request_id: id, queued: this.queue.length + 1 });
      this.tasks.set(id, task);
      this.queue.push(task);
    } else {
      this.log.warn('local queue full; answering 503', { request_id: id });
      this.sendComplete(session, id, { status_code: 503, headers: { 'content-type': 'application/json' }, body: AT_CAPACITY_BODY });
    }
  }

  private startTask(task: Task): void {
    task.state = 'running';
    this.running++;
    const { request } = task;
    const startedAt = Date.now();
    this.log.debug('relaying request to backend', {
      request_id: request.request_id,
      model: request.model,
      path: request.endpoint_path,
      streaming: request.is_streaming,
    });
    void runBackendRequest(this.backend, request, task.controller.signal, this.sinkFor(task, startedAt))
      .catch((err: unknown) => {
        // A bug, not a backend failure: fail this request instead of the whole process.
        this.log.error('request relay crashed', { request_id: request.request_id, error: err as Error });
        this.sinkFor(task, startedAt).fail('worker_internal_error', 'the worker failed to relay this request');
      })
      .finally(() => {
        this.running--;
        if (this.tasks.get(request.request_id) === task) this.tasks.delete(request.request_id);
        this.startQueued();
        this.stopIfIdle();
      });
  }

  private startQueued(): void {
    while (this.running < this.config.maxConcurrency && this.queue.length > 0) {
      const next = this.queue.shift() as Task;
      if (!next.settled) this.startTask(next);
    }
  }

  private sinkFor(task: Task, startedAt: number): ResponseSink {
    const { session } = task;
    const id = task.request.request_id;
    let chunks = 0;
    return {
      start: (status, headers) => {
        if (task.settled || !session.open || !session.features.has(Features.RESPONSE_START)) return;
        this.send(session, { type: 'response_start', request_id: id, status_code: status, headers });
      },
      chunk: (text) => {
        if (task.settled || !session.open) return;
        chunks++;
        task.sentChunks = true;
        const frame: WorkerToServerMessage = { type: 'response_chunk', request_id: id, chunk: text };
        if (session.ws.bufferedAmount < SEND_HIGH_WATER_BYTES) {
          this.send(session, frame);
          return;
        }
        // The gateway reads slower than the backend writes: wait until this frame is on the wire.
        return new Promise<void>((resolve) => {
          if (!this.send(session, frame, resolve)) resolve();
        });
      },
      complete: (parts) => {
        if (task.settled) return;
        task.settled = true;
        this.sendComplete(session, id, parts);
        this.log.info('request completed', {
          request_id: id,
          model: task.request.model,
          status: parts.status_code,
          streaming: task.request.is_streaming,
          chunks: task.request.is_streaming || chunks > 0 ? chunks : undefined,
          token_counts: parts.token_counts,
          duration_ms: Date.now() - startedAt,
        });
      },
      fail: (code, message) => {
        if (task.settled) return;
        task.settled = true;
        this.send(session, { type: 'error', request_id: id, code, message });
        this.log.warn('request failed', { request_id: id, model: task.request.model, code, error: message });
      },
    };
  }

  private sendComplete(session: Session, requestId: string, parts: CompleteParts): void {
    this.send(session, {
      type: 'response_complete',
      request_id: requestId,
      status_code: parts.status_code,
      headers: parts.headers && Object.keys(parts.headers).length > 0 ? parts.headers : undefined,
      body: parts.body ? parts.body : undefined,
      token_counts: parts.token_counts,
    });
  }

  private onCancel(message: CancelMessage): void {
    const task = this.tasks.get(message.request_id);
    if (!task || task.settled) {
      this.log.debug('cancel for a request that is not in flight', { request_id: message.request_id });
      return;
    }
    task.settled = true;
    if (task.state === 'queued') {
      this.queue.splice(this.queue.indexOf(task), 1);
      this.tasks.delete(message.request_id);
    } else {
      task.controller.abort();
    }
    // 499 (client closed request) tells the gateway the slot is free now.
    this.sendComplete(task.session, message.request_id, { status_code: 499 });
    this.log.info('request cancelled by the gateway', { request_id: message.request_id, reason: message.reason });
    this.stopIfIdle();
  }

  /** The link is gone: nobody can receive these answers, so stop spending GPU time on them. */
  private dropTasksOf(session: Session): void {
    for (const [id, task] of this.tasks) {
      if (task.session !== session) continue;
      if (!task.settled) this.log.warn('connection lost with a request in flight; aborting it', { request_id: id });
      task.settled = true;
      task.controller.abort();
      if (task.state === 'queued') this.tasks.delete(id);
    }
    for (let i = this.queue.length - 1; i >= 0; i--) if (this.queue[i].session === session) this.queue.splice(i, 1);
  }

  // ---- shutdown -----------------------------------------------------------------------------

  private stopIfIdle(): void {
    if (this.stopping && this.state === 'stopping' && this.currentLoad() === 0) this.closeForStop();
  }

  /**
   * The drain deadline (or a second stop) has come: abort everything still running. A request
   * the gateway has received nothing for yet (queued here, waiting for the backend, or a stream
   * without a chunk) gets no frame at all: when the link closes the gateway requeues it on another
   * worker, whereas an `error` would fail it for the client. Only requests with chunks already
   * relayed, which cannot be retried, are reported with error{worker_shutting_down}.
   */
  private abortAllForShutdown(): void {
    const session = this.session;
    for (const [id, task] of this.tasks) {
      if (task.settled) continue;
      task.settled = true;
      task.controller.abort();
      if (task.state === 'queued') this.tasks.delete(id);
      if (!task.sentChunks) {
        this.log.warn('aborted a request with nothing relayed yet at the shutdown deadline; the gateway can requeue it', {
          request_id: id,
          state: task.state,
        });
        continue;
      }
      if (session) {
        this.send(session, {
          type: 'error',
          request_id: id,
          code: ErrorCodes.WORKER_SHUTTING_DOWN,
          message: 'worker stopped before the request finished',
        });
      }
      this.log.warn('aborted in-flight request at shutdown deadline', { request_id: id });
    }
    this.queue.length = 0;
    this.closeForStop();
  }

  private closeForStop(): void {
    if (this.stopTimer) clearTimeout(this.stopTimer);
    const session = this.session;
    if (!session || session.closed) return this.finish(0);
    if (session.ws.readyState === WebSocket.OPEN) {
      session.ws.close(1000, 'worker shutting down');
      this.closeWatchdog(session);
    } else {
      session.ws.terminate();
    }
  }

  /** A close handshake the peer never answers must not keep us waiting for ws's 30 s default. */
  private closeWatchdog(session: Session): void {
    if (session.closeTimer) return;
    session.closeTimer = setTimeout(() => session.ws.terminate(), 3_000);
  }

  // ---- models -------------------------------------------------------------------------------

  /** Probed capabilities with the configured ones on top, field by field (--capability always wins). */
  private capabilitiesFor(models: string[]): Record<string, ModelCapabilities> | undefined {
    let out: Record<string, ModelCapabilities> | undefined;
    for (const m of models) {
      const caps: ModelCapabilities = { ...this.probed?.capabilities[m], ...this.config.capabilities[m] };
      if (Object.keys(caps).length > 0) (out ??= {})[m] = caps;
    }
    return out;
  }

  /** Probes when the models differ from the last round, or when the backend answered nothing then. */
  private async probeBackend(force: boolean): Promise<void> {
    if (!this.prober) return;
    if (!force && this.probed && !this.probed.unreachable && sameList(this.probed.models, this.models)) return;
    const result = await this.prober.probe(this.models, this.lifecycle.signal);
    if (this.lifecycle.signal.aborted) return;
    const before = this.probed;
    this.probed = result;
    if (!before || before.runner?.type !== result.runner?.type || before.runner?.version !== result.runner?.version) {
      if (result.runner) {
        this.log.info('backend detected', {
          runner: result.runner.type,
          version: result.runner.version,
          capabilities: result.capabilities,
          endpoints: result.endpoints,
        });
      }
    } else {
      this.log.debug('backend probed', { capabilities: result.capabilities, endpoints: result.endpoints });
    }
  }

  /** Backend model ids, or undefined (logged) if the backend cannot say. */
  private async fetchBackendModels(): Promise<string[] | undefined> {
    const signal = AbortSignal.any([this.lifecycle.signal, AbortSignal.timeout(this.modelsTimeoutMs)]);
    try {
      const listed = await this.backend.listModels(signal);
      return await this.servableOf(listed);
    } catch (err) {
      if (this.lifecycle.signal.aborted) return undefined;
      this.log.warn('backend model list unavailable; keeping the last known list', {
        error: (err as Error).message,
        models: this.models,
      });
      return undefined;
    }
  }

  private async modelsForRegister(): Promise<string[]> {
    if (this.config.discoverModels) {
      const found = await this.fetchBackendModels();
      if (found) this.models = found;
      if (this.models.length === 0) {
        this.log.warn('registering without models: the backend lists none yet', {
          retry: this.config.modelsPollIntervalMs > 0 ? `every ${this.config.modelsPollIntervalMs / 1000}s` : 'on models_refresh',
        });
      }
    }
    await this.probeBackend(false);
    // The first list was read before the probe said which server this is.
    if (this.config.discoverModels) this.models = await this.servableOf(this.models);
    return this.models;
  }

  /**
   * models_refresh always asks the backend, with an explicit --models list too (that list is only
   * what the worker registers with at startup). If the backend cannot answer, the current list is
   * sent again; fetchBackendModels has logged why.
   */
  private async onModelsRefresh(session: Session, reason?: string): Promise<void> {
    this.log.info('gateway asked for the model list', { reason });
    const found = await this.fetchBackendModels();
    if (found && !sameList(found, this.models)) {
      this.log.info('backend model list differs from the current one; using it', { before: this.models, after: found });
    }
    if (found) this.models = found;
    await this.probeBackend(true);
    this.sendModelsUpdate(session);
  }

  private sendModelsUpdate(session: Session): void {
    if (this.stopping) return; // the shutdown's empty list must stand
    if (this.probed?.endpoints) session.advertisedEndpoints = this.probed.endpoints;
    this.send(session, {
      type: 'models_update',
      models: this.models,
      current_load: this.currentLoad(),
      capabilities: this.capabilitiesFor(this.models),
      endpoints: this.probed?.endpoints,
      priority: this.config.priority,
    });
  }

  private schedulePoll(session: Session): void {
    session.pollTimer = setTimeout(async () => {
      if (!session.open) return;
      if (!session.draining && !this.stopping) {
        const found = await this.fetchBackendModels();
        if (found && session.open && !sameList(found, this.models)) {
          this.log.info('backend model list changed', { before: this.models, after: found });
          this.models = found;
          await this.probeBackend(true);
          this.sendModelsUpdate(session);
        }
      }
      if (session.open) this.schedulePoll(session);
    }, this.config.modelsPollIntervalMs);
  }
}

const UNTRUSTED_HINT =
  'the gateway certificate is not signed by a CA this worker trusts: pass --ca-file with your private CA (or set NODE_EXTRA_CA_CERTS); --insecure-skip-verify is for tests only';

/** Node's TLS verification error codes → what an operator should do. */
const TLS_HINTS: Record<string, string> = {
  DEPTH_ZERO_SELF_SIGNED_CERT: UNTRUSTED_HINT,
  SELF_SIGNED_CERT_IN_CHAIN: UNTRUSTED_HINT,
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: UNTRUSTED_HINT,
  UNABLE_TO_GET_ISSUER_CERT: UNTRUSTED_HINT,
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: UNTRUSTED_HINT,
  CERT_UNTRUSTED: UNTRUSTED_HINT,
  CERT_HAS_EXPIRED: 'the gateway certificate has expired (or this host clock is wrong)',
  CERT_NOT_YET_VALID: 'the gateway certificate is not valid yet (or this host clock is wrong)',
  ERR_TLS_CERT_ALTNAME_INVALID: 'the gateway certificate does not name this host: check the host in PROXY_URL',
};

function sameList(a: string[], b: string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
