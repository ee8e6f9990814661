import { Inject } from '@nestjs/common';
import { OnGatewayConnection, WebSocketGateway } from '@nestjs/websockets';
import type { IncomingMessage } from 'node:http';
import type { WebSocket } from 'ws';
import { APP_CONFIG, AppConfig } from '../config';
import { CLOCK, Clock } from '../common/clock';
import { FailedAuthLimiter } from '../auth/failed-auth-limiter';
import { ProvidersService } from '../providers/providers.service';
import { Dispatcher } from '../dispatch/dispatcher.service';
import { MetricsService } from '../observability/metrics.service';
import { WorkerConnection, WorkerLinkDeps } from './worker-connection';

/** `GET /v1/worker/connect?provider=<name>` upgraded to WebSocket, on the HTTP port. */
@WebSocketGateway({ path: '/v1/worker/connect' })
export class WorkerGateway implements OnGatewayConnection {
  private readonly deps: WorkerLinkDeps;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    @Inject(CLOCK) clock: Clock,
    providers: ProvidersService,
    limiter: FailedAuthLimiter,
    dispatcher: Dispatcher,
    metrics: MetricsService,
  ) {
    this.deps = { config, clock, providers, limiter, dispatcher, metrics };
  }

  handleConnection(socket: WebSocket, request: IncomingMessage): void {
    new WorkerConnection(socket, request, this.deps).start();
  }
}
