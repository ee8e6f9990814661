import { Inject, Optional } from '@nestjs/common';
import { OnGatewayConnection, OnGatewayInit, WebSocketGateway } from '@nestjs/websockets';
import type { IncomingMessage } from 'node:http';
import type { WebSocket, WebSocketServer } from 'ws';
import { CORRELATION_HEADER, correlationIdFor } from '../observability/correlation-id';
import { APP_CONFIG, AppConfig } from '../config';
import { CLOCK, Clock } from '../common/clock';
import { FailedAuthLimiter } from '../auth/failed-auth-limiter';
import { ProvidersService } from '../providers/providers.service';
import { MetricsService } from '../observability/metrics.service';
import { LifecycleState } from '../observability/lifecycle-state';
import { Fleet } from '../fleet/fleet.service';
import { LifecycleService } from '../lifecycle/lifecycle.service';
import { WorkerConnection, WorkerLinkDeps } from './worker-connection';
import { WorkerAuthGate } from './worker-auth-gate';
import { WorkerFrames } from '../cluster-link/worker-frames';

/** `GET /v1/worker/connect?provider=<name>` upgraded to WebSocket, on the HTTP port. */
@WebSocketGateway({ path: '/v1/worker/connect' })
export class WorkerGateway implements OnGatewayConnection, OnGatewayInit {
  private readonly deps: WorkerLinkDeps;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    @Inject(CLOCK) clock: Clock,
    providers: ProvidersService,
    limiter: FailedAuthLimiter,
    frames: WorkerFrames,
    metrics: MetricsService,
    lifecycle: LifecycleState,
    fleet: Fleet,
    @Optional() lifecycleReports?: LifecycleService,
  ) {
    const authGate = new WorkerAuthGate(limiter, config.authLimiter.maxFailures);
    this.deps = { config, clock, providers, limiter, authGate, fleet, frames: frames.handlers, metrics, lifecycle, lifecycleReports };
  }

  /** The 101 Switching Protocols answer carries X-Correlation-Id like every other response. */
  afterInit(server: WebSocketServer): void {
    // Until a worker has registered it may send only small frames (ws checks a frame's announced
    // length before buffering it, and closes 1009 above it); register raises its socket's cap.
    server.options.maxPayload = this.deps.config.connections.workerRegisterFrameBytes;
    server.on('headers', (headers: string[], request: IncomingMessage) => {
      headers.push(`${CORRELATION_HEADER}: ${correlationIdFor(request.headers[CORRELATION_HEADER])}`);
    });
  }

  handleConnection(socket: WebSocket, request: IncomingMessage): void {
    new WorkerConnection(socket, request, this.deps).start();
  }
}
