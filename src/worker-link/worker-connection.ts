import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { Logger } from '@nestjs/common';
import type { WebSocket, RawData } from 'ws';
import { AppConfig } from '../config';
import { Clock, TimerHandle } from '../common/clock';
import {
  CloseCodes,
  CloseReasons,
  Features,
  GATEWAY_FEATURES,
  DroppedFrame,
  encodeMessage,
  parseWorkerMessage,
  PROTOCOL_VERSION,
  ProtocolError,
  RegisterMessage,
  ServerToWorkerMessage,
  WorkerToServerMessage,
} from '../protocol';
import { FailedAuthLimiter } from '../auth/failed-auth-limiter';
import { ProvidersService, WorkerAuthResult } from '../providers/providers.service';
import { WorkerChannel, WorkerSession } from '../fleet/worker-session';
import { Fleet } from '../fleet/fleet.service';
import type { LifecycleReportHandler } from '../lifecycle/lifecycle-report-handler';
import type { ResponseFrames } from '../dispatch/response-frames';
import { MetricsService } from '../observability/metrics.service';
import { LifecycleState } from '../observability/lifecycle-state';
import { restrictToProvider, sanitizeMaxConcurrent, sanitizeModels, sanitizeWorkerName, WorkerLimits } from './sanitize-models';
import { WorkerAuthGate } from './worker-auth-gate';
import { workerCode } from '../dispatch/response-frames';
import { sendInTurn, setMaxPayload } from './worker-ws.adapter';
import { registerFrameCap } from './register-frame-cap';

export interface WorkerLinkDeps {
  config: AppConfig;
  clock: Clock;
  providers: ProvidersService;
  limiter: FailedAuthLimiter;
  /** Admission to scrypt checks of unknown worker secrets (in-flight attempts count as failures). */
  authGate: WorkerAuthGate;
  /** The workers of this process: registration, reports, leaving. */
  fleet: Fleet;
  /** Frames about requests (chunks, completions, errors) go to the requests' dispatcher. */
  frames: Pick<ResponseFrames, 'onChunk' | 'onComplete' | 'onResponseStart' | 'onWorkerError'>;
  metrics: MetricsService;
  lifecycle: LifecycleState;
  /** Receives negotiated `lifecycle_status` reports; without it they are logged and dropped. */
  lifecycleReports?: LifecycleReportHandler;
}

type State = 'authenticating' | 'awaiting_register' | 'registered' | 'closed';

const log = new Logger('WorkerLink');

/** The limiter scope of every provider name the gateway does not know. */
const UNKNOWN_PROVIDER = '\u0000unknown-provider';

/** Column size of worker records' remote_address. */
const MAX_ADDRESS_LENGTH = 128;

/**
 * One worker WebSocket: handshake authentication, registration, heartbeat and frame routing.
 * Scheduling decisions belong to the Fleet and the Dispatcher; this class only translates frames.
 */
export class WorkerConnection implements WorkerChannel {
  private state: State = 'authenticating';
  private pending: RawData[] = [];
  private worker: WorkerSession | undefined;
  private registerTimer: TimerHandle | undefined;
  private heartbeatTimer: TimerHandle | undefined;
  private refreshTimer: TimerHandle | undefined;
  private lastInboundAt: number;
  private readonly clientKey: string;
  private readonly limiterKey: string;
  private readonly providerName: string;
  private readonly secret: string | undefined;

  constructor(
    private readonly socket: WebSocket,
    request: IncomingMessage,
    private readonly deps: WorkerLinkDeps,
  ) {
    this.lastInboundAt = deps.clock.now();
    // Bounded: it is stored in worker records (a forwarded address is client-controlled text).
    this.clientKey = deps.limiter.clientKey(request.socket.remoteAddress, request.headers).slice(0, MAX_ADDRESS_LENGTH);
    const url = new URL(request.url ?? '/', 'ws://gateway');
    this.providerName = url.searchParams.get('provider') || deps.config.defaultProviderName;
    // Unknown provider names share one entry per address: inventing a new name for every
    // attempt must not dodge the limiter (each attempt still costs a dummy scrypt).
    this.limiterKey = deps.limiter.scopedKey(this.clientKey, deps.providers.get(this.providerName) ? this.providerName : UNKNOWN_PROVIDER);
    // The header wins whenever it is present, even when it is wrong (no silent fallback).
    const header = request.headers['x-worker-secret'];
    this.secret = header !== undefined ? (Array.isArray(header) ? header[0] : header) : (url.searchParams.get('worker_secret') ?? undefined);
  }

  start(): void {
    // The server-wide cap is the base; this provider's max_models adds room for its model list.
    // Set before any frame is read (the socket's data is read on a later tick).
    setMaxPayload(this.socket, registerFrameCap(this.deps.config.connections, this.deps.providers.get(this.providerName)?.maxModelsPerWorker));
    this.socket.on('message', (data, isBinary) => this.onFrame(data, isBinary));
    this.socket.on('close', () => this.teardown());
    this.socket.on('error', (err) => log.warn(`worker socket error from ${this.clientKey}: ${err.message}`));
    // A worker drained by our shutdown reconnects at once; accepting it would only drain it again,
    // in a loop until the process exits. Refused before any secret work, and not an auth failure.
    if (this.deps.lifecycle.isShuttingDown) return this.refuseRestarting();
    this.authenticate().catch((e) => {
      log.error(`worker authentication error from ${this.clientKey}: ${(e as Error).stack ?? e}`);
      this.close(CloseCodes.INTERNAL_ERROR, 'internal error');
    });
  }

  // ---- WorkerChannel

  send(message: ServerToWorkerMessage): void {
    if (this.state === 'closed') return;
    sendInTurn(this.socket, encodeMessage(message), message.type === 'request');
  }

  close(code: number, reason: string): void {
    if (this.state === 'closed') return;
    this.teardown();
    this.socket.close(code, reason);
  }

  // ---- handshake

  private async authenticate(): Promise<void> {
    const { limiter, providers, metrics, authGate } = this.deps;
    // A secret already known to be right (it passed scrypt before, or the gateway holds it) is
    // looked up first and accepted even while this address is throttled: failures from a
    // neighbour behind the same proxy must not lock out every worker of the provider. Only
    // unknown material spends scrypt, and only within the address's failure allowance.
    const known = providers.isVerifiedWorkerSecret(this.providerName, this.secret);
    if (!known && !authGate.tryBegin(this.limiterKey)) {
      metrics.auth.workerFailure('rate_limited');
      log.warn(
        `worker authentication rate limited for provider "${this.providerName}" from ${this.clientKey}: ` +
          'repeated authentication failures from this address for this provider',
      );
      this.close(CloseCodes.POLICY_VIOLATION, CloseReasons.AUTH_RATE_LIMITED);
      return;
    }
    let result: WorkerAuthResult;
    try {
      result = await providers.verifyWorkerSecret(this.providerName, this.secret);
    } finally {
      if (!known) authGate.end(this.limiterKey);
    }
    // Recorded in the same step as the check ends, so the allowance is never briefly free.
    if (result !== 'ok' && !known) limiter.recordFailure(this.limiterKey);
    if (this.state === 'closed') return;
    if (result !== 'ok') {
      metrics.auth.workerFailure(result);
      log.warn(`worker authentication failed for provider "${this.providerName}" from ${this.clientKey}: ${result}`);
      this.close(CloseCodes.POLICY_VIOLATION, CloseReasons.AUTH_FAILED);
      return;
    }
    this.state = 'awaiting_register';
    this.registerTimer = this.deps.clock.setTimeout(
      () => this.protocolError('no register frame within the registration timeout'),
      this.deps.config.registerTimeoutMs,
    );
    const early = this.pending;
    this.pending = [];
    for (const data of early) this.onFrame(data, false);
  }

  private onFrame(data: RawData, isBinary: boolean): void {
    if (this.state === 'closed') return;
    this.lastInboundAt = this.deps.clock.now();
    // Checked before buffering: frames held during authentication are replayed as text.
    if (isBinary) return this.protocolError('binary frames are not part of the protocol');
    if (this.state === 'authenticating') {
      // Only `register` may come first: one frame (at most the register cap, register-frame-cap.ts) is held.
      if (this.pending.length === 0) this.pending.push(data);
      else this.protocolError('more than one frame before authentication completed');
      return;
    }
    let message: WorkerToServerMessage;
    try {
      message = parseWorkerMessage(data.toString());
    } catch (e) {
      if (e instanceof DroppedFrame && this.state === 'registered') {
        log.warn(`dropped a frame from worker ${this.worker?.id}: ${e.message}`);
        return;
      }
      return this.protocolError(e instanceof ProtocolError || e instanceof DroppedFrame ? e.message : 'unreadable frame');
    }
    if (this.state === 'awaiting_register') return this.register(message);
    try {
      this.route(message, this.worker!);
    } catch (e) {
      // A frame must never take the gateway down with it: drop this worker, keep serving the rest.
      log.error(`failed to handle a ${message.type} frame from worker ${this.worker?.id}: ${(e as Error).stack ?? e}`);
      this.close(CloseCodes.PROTOCOL_ERROR, CloseReasons.PROTOCOL_ERROR);
    }
  }

  private register(message: WorkerToServerMessage): void {
    if (message.type !== 'register') return this.protocolError(`first frame must be register, got ${message.type}`);
    const version = message.protocol_version;
    if (version === undefined ? this.deps.config.rejectLegacyWorkers : version !== PROTOCOL_VERSION) {
      return this.protocolError(`unsupported protocol version ${version ?? '(none)'}`);
    }
    if (this.deps.lifecycle.isShuttingDown) return this.refuseRestarting();
    const provider = this.deps.providers.get(this.providerName);
    if (!provider || !provider.enabled) {
      this.close(CloseCodes.POLICY_VIOLATION, CloseReasons.AUTH_FAILED);
      return;
    }
    if (message.models.length > WorkerLimits.rawModelEntries) return this.protocolError(`register with ${message.models.length} model entries`);
    const sanitized = sanitizeModels(message.models, provider.maxModelsPerWorker);
    const warnings = sanitized.warnings;
    // Intersected with what the provider may serve; the ack lists what was kept and warns about the rest.
    const models = restrictToProvider(
      sanitized.models,
      (m) => this.deps.providers.mayServe(provider, m),
      { name: provider.name, restricted: provider.allowList.restricted },
      warnings,
    );
    const name = sanitizeWorkerName(message.worker_name, warnings);
    // An operator drained this pool or this worker name until undrain: tell the daemon to wait.
    if (provider.cordon) return this.refuseCordoned(`provider "${provider.name}" is cordoned (POST /v1/pools/${provider.name}/undrain lifts it)`, name);
    if (this.deps.fleet.cordons.of(provider.name, name)) {
      return this.refuseCordoned(`worker name "${name}" of provider "${provider.name}" is cordoned (POST /admin/workers/:id/undrain lifts it)`, name);
    }
    const maxConcurrent = sanitizeMaxConcurrent(message.max_concurrent, warnings);
    const now = this.deps.clock.now();
    const worker = new WorkerSession(
      {
        id: `w-${randomUUID()}`,
        provider: provider.name,
        name,
        models,
        maxConcurrent,
        remoteAddress: this.clientKey,
        connectedAt: now,
        capabilities: message.capabilities,
        endpoints: message.endpoints,
        declaredPriority: message.priority,
      },
      this,
    );
    worker.externalLoad = message.current_load ?? 0;
    worker.runner = message.runner;
    worker.runnerCapabilities = message.runner_capabilities;
    if (this.registerTimer) this.deps.clock.clearTimeout(this.registerTimer);
    this.state = 'registered';
    // Frames were capped at the register cap (register-frame-cap.ts) until now; responses may be larger.
    if (!setMaxPayload(this.socket, this.deps.config.connections.maxWorkerFrameBytes)) log.error('could not raise the worker frame cap: ws internals changed');
    this.worker = worker;
    const features = acceptedFeatures(message);
    worker.features = new Set(features);
    this.send(registerAck(worker.id, models, message, warnings, features));
    if (warnings.length) log.warn(`worker ${worker.id} (${worker.name}) registered with warnings: ${warnings.join('; ')}`);
    log.log(`worker ${worker.id} (${worker.name}) registered for provider "${provider.name}" with ${models.length} model(s)`);
    this.startHeartbeat();
    this.deps.fleet.attach(worker);
  }

  private route(message: WorkerToServerMessage, worker: WorkerSession): void {
    const { frames, fleet } = this.deps;
    worker.lastSeenAt = this.lastInboundAt;
    switch (message.type) {
      case 'response_chunk':
        if (frames.onChunk(worker, message.request_id, message.chunk) === 'unknown') {
          this.protocolError(`chunk for request ${message.request_id} this worker does not own`);
        }
        return;
      case 'response_complete':
        if (frames.onComplete(worker, message) === 'unknown') {
          this.protocolError(`completion for request ${message.request_id} this worker does not own`);
        }
        return;
      case 'pong':
        if (message.cache_stats && worker.features.has(Features.CACHE_STATS)) worker.cacheStats = message.cache_stats;
        fleet.onPong(worker, message.current_load);
        return;
      case 'runner_capabilities':
        if (!worker.features.has(Features.RUNNER_CAPABILITIES)) return this.protocolError('runner_capabilities without the negotiated feature');
        // Read where it is used (capabilities, metrics at scrape, load target selection): nothing else to update.
        worker.runnerCapabilities = message.runner_capabilities;
        return;
      case 'response_start':
        if (!worker.features.has(Features.RESPONSE_START)) return this.protocolError('response_start without the negotiated feature');
        if (frames.onResponseStart(worker, message) === 'unknown') {
          this.protocolError(`response_start for request ${message.request_id} this worker does not own`);
        }
        return;
      case 'models_update': {
        if (message.models.length > WorkerLimits.rawModelEntries) return this.protocolError(`models_update with ${message.models.length} model entries`);
        const provider = this.deps.providers.get(worker.provider);
        const sanitized = sanitizeModels(message.models, provider?.maxModelsPerWorker ?? this.deps.config.providerDefaults.maxModelsPerWorker);
        const warnings = sanitized.warnings;
        const models = provider
          ? restrictToProvider(
              sanitized.models,
              (m) => this.deps.providers.mayServe(provider, m),
              { name: provider.name, restricted: provider.allowList.restricted },
              warnings,
            )
          : [];
        if (warnings.length) log.warn(`worker ${worker.id} models_update: ${warnings.join('; ')}`);
        fleet.onModelsChanged(worker, {
          models,
          capabilities: message.capabilities,
          endpoints: message.endpoints,
          priority: message.priority,
          currentLoad: message.current_load,
        });
        return;
      }
      case 'error':
        if (message.request_id) frames.onWorkerError(worker, message.request_id, workerCode(message.code));
        else log.warn(`worker ${worker.id} reported error ${message.code}: ${message.message}`);
        return;
      case 'lifecycle_status':
        // Not fatal even unnegotiated: a report about an operation is never worth a session.
        if (!worker.features.has(Features.MODEL_LIFECYCLE) || !this.deps.lifecycleReports) {
          log.warn(`dropped lifecycle_status for task ${message.task_id} from worker ${worker.id}: model_lifecycle not negotiated`);
          return;
        }
        this.deps.lifecycleReports.onLifecycleStatus(worker, message);
        return;
      case 'register':
        return this.protocolError('second register frame');
    }
  }

  // ---- heartbeat

  private startHeartbeat(): void {
    const { clock, config } = this.deps;
    // Pings go out on a fixed period whatever the traffic: deployed workers reconnect after
    // hearing nothing for 90 s, even in the middle of a long stream.
    this.heartbeatTimer = clock.setInterval(() => {
      const now = clock.now();
      if (now - this.lastInboundAt >= config.heartbeatTimeoutMs) {
        log.warn(`worker ${this.worker?.id} heartbeat timed out`);
        this.deps.metrics.workerHeartbeatTimeout(this.worker?.provider ?? this.providerName);
        this.close(CloseCodes.NORMAL, CloseReasons.HEARTBEAT_TIMEOUT);
        return;
      }
      this.worker?.pingSent(); // its pong's load is compared only with requests sent before it
      this.send({ type: 'ping', timestamp_unix_ms: now });
    }, config.heartbeatIntervalMs);
    if (config.modelsRefreshIntervalMs > 0) {
      this.refreshTimer = clock.setInterval(() => this.send({ type: 'models_refresh', reason: 'periodic' }), config.modelsRefreshIntervalMs);
    }
  }

  // ---- teardown

  private refuseRestarting(): void {
    log.log(`refused a worker connection from ${this.clientKey}: the gateway is shutting down`);
    this.close(CloseCodes.SERVICE_RESTART, CloseReasons.GATEWAY_RESTARTING);
  }

  private refuseCordoned(why: string, name: string): void {
    log.log(`refused worker "${name}" from ${this.clientKey}: ${why}; closing ${CloseCodes.TRY_AGAIN_LATER}`);
    this.close(CloseCodes.TRY_AGAIN_LATER, CloseReasons.CORDONED);
  }

  private protocolError(detail: string): void {
    log.warn(`worker protocol error from ${this.worker?.id ?? this.clientKey}: ${detail}`);
    this.close(CloseCodes.PROTOCOL_ERROR, CloseReasons.PROTOCOL_ERROR);
  }

  /** Idempotent: stops timers and hands the worker back to the Fleet (its requests are requeued or failed). */
  private teardown(): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.pending = [];
    const { clock } = this.deps;
    if (this.registerTimer) clock.clearTimeout(this.registerTimer);
    if (this.heartbeatTimer) clock.clearInterval(this.heartbeatTimer);
    if (this.refreshTimer) clock.clearInterval(this.refreshTimer);
    if (this.worker) {
      this.deps.fleet.detach(this.worker);
    }
  }
}

function registerAck(workerId: string, models: string[], message: RegisterMessage, warnings: string[], features: string[]): ServerToWorkerMessage {
  return {
    type: 'register_ack',
    worker_id: workerId,
    models,
    warnings: warnings.length ? warnings : undefined,
    protocol_version: message.protocol_version,
    // Only a worker that asked for extensions hears about them (ModelRelay's daemon never asks).
    features: message.features !== undefined ? features : undefined,
  };
}

/** The extensions a worker asked for that this gateway speaks. */
function acceptedFeatures(message: RegisterMessage): string[] {
  return (message.features ?? []).filter((f, i, all) => GATEWAY_FEATURES.includes(f) && all.indexOf(f) === i);
}
