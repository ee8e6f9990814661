import { EventEmitter } from 'node:events';
import WebSocket from 'ws';
import { CloseCodes, Features, GracefulShutdownMessage, RegisterAckMessage, ServerToWorkerMessage } from '../protocol';
import { Clock, TimerHandle, daemonClock } from './clock';
import { DaemonEvents, DaemonState, DaemonStatus, WorkerDaemonOptions } from './daemon-types';
import { WorkerConfig, WorkerConfigError, connectUrl, connectUrls } from './config';
import { GatewayLink } from './link/gateway-link';
import { logNetworkSetup } from './link/network-log';
import { ReconnectPolicy } from './link/reconnect-policy';
import { LinkSession } from './link/session';
import { registerFrame } from './link/register-frame';
import { Logger, silentLogger } from './logger';
import { LifecycleHttp } from './models/lifecycle/backend-http';
import { LifecycleDispatcher } from './models/lifecycle/dispatcher';
import { ModelCatalog } from './models/model-catalog';
import { ModelSync } from './models/model-sync';
import { BackendProber } from './models/probes/backend-prober';
import { RUNNER_REFRESH_MS, RunnerRefresh } from './models/runner-refresh';
import { ProxySettings } from './network/proxy-env';
import { TlsTrust, tlsTrust } from './network/tls-trust';
import { BackendClient } from './requests/backend-client';
import { RequestRelay } from './requests/request-relay';
import { runBackendRequest } from './requests/request-runner';
import { CacheTelemetry } from './telemetry/cache-telemetry';

export type { DaemonEvents, DaemonState, DaemonStatus, DisconnectInfo, WorkerDaemonOptions } from './daemon-types';

/**
 * The worker: dials the gateway, registers, relays requests to the backend and keeps the link
 * alive (heartbeat watchdog, reconnect with backoff) until `stop()` or a drain with exitOnDrain.
 *
 * This class is the composition root: the WebSocket session lives in `link/`, relaying in
 * `requests/`, the model list, probing and lifecycle in `models/`. What stays here is the
 * daemon's own state (connecting, stopping, stopped) and the stop/drain sequence.
 */
export class WorkerDaemon extends EventEmitter<DaemonEvents> {
  private state: DaemonState = 'idle';
  private stopping = false;
  private stopTimer?: TimerHandle;
  /** Aborted on stop: interrupts a models lookup that is holding up a connect. */
  private readonly lifecycle = new AbortController();
  private resolveExit!: (code: number) => void;
  private readonly exited = new Promise<number>((resolve) => (this.resolveExit = resolve));
  private readonly log: Logger;
  private readonly clock: Clock;
  private readonly proxy: ProxySettings;
  private readonly tls: TlsTrust;
  private readonly backend: BackendClient;
  private readonly runnerRefresh: RunnerRefresh;
  private readonly drainGraceMs: number;
  private readonly link: GatewayLink;
  private readonly relay: RequestRelay;
  private readonly catalog: ModelCatalog;
  private readonly modelSync: ModelSync;
  /** The backend's cache state for `pong.cache_stats`, when the runner has one to read. */
  readonly cacheTelemetry: CacheTelemetry;
  /** The model list read for the dial in progress: the register frame carries it. */
  private registerModels: string[] = [];

  constructor(
    private readonly config: WorkerConfig,
    options: WorkerDaemonOptions = {},
  ) {
    super();
    const log = (this.log = options.logger ?? silentLogger);
    const clock = (this.clock = options.clock ?? daemonClock);
    this.proxy = { httpProxy: config.httpProxy, httpsProxy: config.httpsProxy, noProxy: config.noProxy };
    try {
      this.tls = tlsTrust(config);
    } catch (err) {
      // A CA file that cannot be read is a configuration problem (exit 2), not a crash.
      throw new WorkerConfigError([(err as Error).message]);
    }
    const backend = (this.backend = new BackendClient(config.backendUrl, {
      apiKey: config.backendApiKey,
      userAgent: options.userAgent ?? 'switchboard-worker',
      proxy: this.proxy,
      tls: this.tls,
    }));
    this.drainGraceMs = options.drainGraceMs ?? 5_000;
    const cordonRetryMs = options.cordonRetryMs ?? 30_000;
    const policy = new ReconnectPolicy(
      {
        reconnectMinMs: config.reconnectMinMs,
        reconnectMaxMs: config.reconnectMaxMs,
        stableSessionMs: options.stableSessionMs ?? 30_000,
        restartReconnectMs: options.restartReconnectMs ?? 1_000,
        restartReconnectMaxMs: options.restartReconnectMaxMs ?? 3_000,
        restartWindowMs: options.restartWindowMs ?? 120_000,
        cordonRetryMs,
        cordonRetryMaxMs: Math.max(cordonRetryMs, options.cordonRetryMaxMs ?? 60_000),
        random: options.random,
      },
      clock,
      log,
    );
    this.link = new GatewayLink(
      {
        url: connectUrl(config),
        urls: connectUrls(config),
        workerSecret: config.workerSecret,
        heartbeatIntervalMs: config.heartbeatIntervalMs,
        proxy: this.proxy,
        tls: this.tls,
      },
      policy,
      {
        opened: (session) => this.onOpen(session),
        message: (session, message) => this.onMessage(session, message),
        ended: (session) => this.relay.dropAll(session),
        disconnected: (session, code, reason) => this.onDisconnected(session, code, reason),
        reconnectScheduled: ({ delayMs, attempt }) => {
          this.state = 'waiting_to_reconnect';
          this.emit('reconnect_scheduled', { delayMs, attempt });
        },
        reconnect: () => void this.connect(),
        stopping: () => this.stopping,
      },
      clock,
      log,
      options.openSocket,
    );
    this.relay = new RequestRelay({
      maxConcurrency: config.maxConcurrency,
      run: (request, signal, sink) => runBackendRequest(backend, request, signal, sink),
      stopping: () => this.stopping,
      settled: () => this.stopIfIdle(),
      clock,
      log,
    });
    const lifecycleHttp = new LifecycleHttp(backend, options.lifecycleRequestTimeoutMs ?? 30_000, clock);
    const prober = config.probe ? new BackendProber(backend, log, options.probeTimeoutMs ?? 2_000) : undefined;
    this.catalog = new ModelCatalog(
      {
        discoverModels: config.discoverModels,
        models: config.models,
        capabilities: config.capabilities,
        runner: config.runner,
        loraDir: config.loraDir,
        modelsPollIntervalMs: config.modelsPollIntervalMs,
        modelsTimeoutMs: options.modelsTimeoutMs ?? 5_000,
        signal: this.lifecycle.signal,
      },
      backend,
      lifecycleHttp,
      prober,
      log,
    );
    this.cacheTelemetry = new CacheTelemetry(backend, () => this.catalog.probe?.runner?.type ?? (config.runner !== 'auto' ? config.runner : undefined), log);
    const dispatcher = new LifecycleDispatcher({
      log,
      http: lifecycleHttp,
      adapter: () => this.catalog.adapter(),
      timeoutMs: config.lifecycleTimeoutMs,
      pollMs: options.lifecyclePollMs ?? 1_000,
      progressIntervalMs: options.lifecycleProgressIntervalMs ?? 1_000,
      clock,
    });
    this.runnerRefresh = new RunnerRefresh(backend, this.catalog, {
      intervalMs: options.runnerRefreshMs ?? RUNNER_REFRESH_MS,
      timeoutMs: options.probeTimeoutMs ?? 2_000,
      stopping: () => this.stopping,
      log,
    });
    this.modelSync = new ModelSync(this.catalog, dispatcher, {
      priority: config.priority,
      modelsPollIntervalMs: config.modelsPollIntervalMs,
      current: () => this.link.current,
      load: () => this.relay.load,
      stopping: () => this.stopping,
      signal: this.lifecycle.signal,
      log,
    });
  }

  get status(): DaemonStatus {
    const session = this.link.current;
    return {
      state: this.state,
      draining: session?.draining ?? false,
      currentLoad: this.relay.load,
      runningRequests: this.relay.running,
      queuedRequests: this.relay.queued,
      models: [...this.catalog.models],
      workerId: session?.workerId,
    };
  }

  /** Resolves with the process exit code once the daemon has stopped for good. */
  waitForExit(): Promise<number> {
    return this.exited;
  }

  start(): void {
    if (this.state !== 'idle') return;
    const { config } = this;
    this.log.info('worker starting', {
      gateway: connectUrl(config),
      backend: config.backendUrl,
      worker_name: config.workerName,
      models: config.discoverModels ? '* (from backend)' : config.models,
      max_concurrency: config.maxConcurrency,
      priority: config.priority,
      probe: config.probe,
    });
    logNetworkSetup(this.log, {
      gatewayUrl: connectUrl(config),
      backendUrl: config.backendUrl,
      proxy: this.proxy,
      insecureSkipVerify: config.insecureSkipVerify,
      caFile: config.caFile,
    });
    void this.connect();
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
    this.link.cancelReconnect();
    const session = this.link.current;
    if (!session || !session.open) {
      if (session && !session.closed) session.terminate();
      else this.finish(0);
      return this.exited;
    }
    this.state = 'stopping';
    const inFlight = this.relay.load;
    this.log.info('stopping: no new requests; finishing in-flight ones', {
      in_flight: inFlight,
      deadline_secs: this.config.drainTimeoutMs / 1000,
    });
    this.emit('draining', { source: 'signal' });
    // An empty model list makes the gateway route nothing more here while we finish.
    session.send({ type: 'models_update', models: [], current_load: inFlight });
    if (inFlight === 0) {
      this.closeForStop();
    } else {
      this.stopTimer = this.clock.setTimeout(() => this.abortAllForShutdown(), this.config.drainTimeoutMs);
    }
    return this.exited;
  }

  // ---- connection ---------------------------------------------------------------------------

  private async connect(): Promise<void> {
    if (this.stopping) return this.finish(0);
    this.state = 'connecting';
    const models = await this.catalog.forRegister();
    if (this.stopping) return this.finish(0);
    this.registerModels = models;
    this.link.dial();
  }

  private onOpen(session: LinkSession): void {
    const { config } = this;
    const models = this.registerModels;
    this.state = this.stopping ? 'stopping' : 'connected';
    session.advertisedEndpoints = this.catalog.probe?.endpoints;
    session.send(registerFrame(config, models, this.catalog, this.relay.load, this.cacheTelemetry.supported));
    this.log.info('connected to gateway; registering', { models, max_concurrent: config.maxConcurrency });
    this.link.armIdleTimer(session);
    if (config.discoverModels && config.modelsPollIntervalMs > 0) this.modelSync.schedulePoll(session);
    this.emit('connected');
  }

  private onMessage(session: LinkSession, message: ServerToWorkerMessage): void {
    switch (message.type) {
      case 'register_ack':
        return this.onRegisterAck(session, message);
      case 'request':
        return this.relay.accept(session, message);
      case 'cancel':
        return this.relay.cancel(message);
      case 'ping': {
        // Answered at once with the cache figures last read; the next read starts in the background.
        const cache = session.features.has(Features.CACHE_STATS) ? this.cacheTelemetry.current : undefined;
        session.send({ type: 'pong', current_load: this.relay.load, timestamp_unix_ms: message.timestamp_unix_ms, ...(cache ? { cache_stats: cache } : {}) });
        if (session.features.has(Features.CACHE_STATS)) void this.cacheTelemetry.refresh();
        return;
      }
      case 'graceful_shutdown':
        return this.onGracefulShutdown(session, message);
      case 'models_refresh':
        void this.modelSync.refresh(session, message.reason);
        return;
      case 'model_load':
      case 'model_unload':
      case 'cache_flush':
        return this.modelSync.lifecycleCommand(session, message);
    }
  }

  private onRegisterAck(session: LinkSession, ack: RegisterAckMessage): void {
    session.workerId = ack.worker_id;
    session.features = new Set(ack.features ?? []);
    this.link.registered();
    if (session.features.has(Features.CACHE_STATS)) void this.cacheTelemetry.refresh();
    this.runnerRefresh.start(session);
    const probed = this.catalog.probe;
    this.log.info('registered with the gateway', {
      worker_id: ack.worker_id,
      models: ack.models,
      runner: probed?.runner,
      endpoints: probed?.endpoints,
      priority: this.config.priority,
    });
    for (const warning of ack.warnings ?? []) this.log.warn('gateway registration warning', { warning });
    this.emit('registered', ack);
  }

  private onGracefulShutdown(session: LinkSession, message: GracefulShutdownMessage): void {
    if (session.draining) return;
    session.draining = true;
    this.log.warn('gateway asked this worker to drain', {
      reason: message.reason,
      drain_timeout_secs: message.drain_timeout_secs,
      in_flight: this.relay.load,
      then: this.config.exitOnDrain ? 'exit' : 'reconnect',
    });
    this.emit('draining', { source: 'gateway', reason: message.reason });
    // The gateway closes the link once we are idle or its deadline passes; this is only a fallback.
    const deadlineMs = (message.drain_timeout_secs ? message.drain_timeout_secs * 1000 : this.config.drainTimeoutMs) + this.drainGraceMs;
    session.setTimer(
      'drain',
      () => {
        if (!session.open) return;
        this.log.warn('gateway did not close the link after its drain deadline; closing it', { in_flight: this.relay.load });
        session.close(1000, 'drain deadline passed');
      },
      deadlineMs,
    );
  }

  private onDisconnected(session: LinkSession, code: number, reason: string): void {
    this.emit('disconnected', { code, reason });
    if (this.stopping) return this.finish(0);
    if (session.draining && this.config.exitOnDrain) {
      this.log.info('drained by the gateway; exiting (--exit-on-drain)');
      return this.finish(0);
    }
    if (code === CloseCodes.TRY_AGAIN_LATER) return this.link.scheduleCordonRetry();
    this.link.scheduleReconnect();
  }

  // ---- shutdown -----------------------------------------------------------------------------

  private stopIfIdle(): void {
    if (this.stopping && this.state === 'stopping' && this.relay.load === 0) this.closeForStop();
  }

  /** The drain deadline (or a second stop) has come: see RequestRelay.abortAll for who gets what. */
  private abortAllForShutdown(): void {
    this.relay.abortAll(this.link.current);
    this.closeForStop();
  }

  private closeForStop(): void {
    if (this.stopTimer) this.clock.clearTimeout(this.stopTimer);
    const session = this.link.current;
    if (!session || session.closed) return this.finish(0);
    if (session.ws.readyState === WebSocket.OPEN) {
      session.close(1000, 'worker shutting down');
    } else {
      session.terminate();
    }
  }

  private finish(code: number): void {
    if (this.state === 'stopped') return;
    this.state = 'stopped';
    this.link.cancelReconnect();
    if (this.stopTimer) this.clock.clearTimeout(this.stopTimer);
    this.link.current?.clearTimers();
    this.backend.close();
    this.log.info('worker stopped', { exit_code: code });
    this.emit('exit', code);
    this.resolveExit(code);
  }
}
