import { Global, Inject, Module, OnApplicationBootstrap, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance } from 'fastify';
import { APP_CONFIG, AppConfig } from '../config';
import { CLOCK, Clock } from '../common/clock';
import { Membership } from '../cluster/membership.port';
import { RedisFleetBoard } from '../cluster/fleet-board';
import { Dispatcher } from '../dispatch/dispatcher.service';
import { DispatchModule } from '../dispatch/dispatch.module';
import { FleetModule } from '../fleet/fleet.module';
import { QueueModule } from '../queue/queue.module';
import { AdmissionQueue } from '../queue/admission-queue';
import type { RelayRequest } from '../dispatch/relay-request';
import { Fleet } from '../fleet/fleet.service';
import { RemoteWorkers } from '../fleet/remote-workers';
import { ForwardRelays, RequestFrames } from './forward-relays';
import { registerForwardRoute } from './forward-route';
import { FleetSync } from './fleet-sync';
import { ForwardContext, RemoteChannel } from './remote-channel';

/**
 * The frame handlers worker links use: the Dispatcher's own in one process; in cluster mode the
 * relays of forwarded requests in front of them (a frame about a request another replica sent
 * here goes back to that replica, every other frame to the Dispatcher).
 */
export abstract class WorkerFrames {
  abstract readonly handlers: RequestFrames;
}

/** Changes published at most this often (a busy worker's load changes with every request). */
const FLUSH_MS = 20;

/**
 * Cluster mode's shared fleet and forwarding: every replica sees every worker of the cluster (its
 * own, and the others' as remote sessions kept in step over the fleet board), and a request routed
 * to another replica's worker is forwarded there over the internal link, byte for byte. Without
 * `CLUSTER_REDIS_URL` it does nothing: no connection, no timer, no route.
 */
@Global()
@Module({
  imports: [FleetModule, DispatchModule, QueueModule],
  providers: [
    {
      provide: WorkerFrames,
      inject: [APP_CONFIG, Fleet, Dispatcher],
      useFactory: (config: AppConfig, fleet: Fleet, dispatcher: Dispatcher): WorkerFrames => ({
        handlers: config.cluster.redisUrl ? new ForwardRelays(fleet, dispatcher.frames) : dispatcher.frames,
      }),
    },
  ],
  exports: [WorkerFrames],
})
export class ClusterLinkModule implements OnModuleInit, OnApplicationBootstrap, OnModuleDestroy {
  private sync: FleetSync | undefined;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(CLOCK) private readonly clock: Clock,
    private readonly fleet: Fleet,
    private readonly dispatcher: Dispatcher,
    private readonly membership: Membership,
    private readonly frames: WorkerFrames,
    private readonly http: HttpAdapterHost,
    private readonly queue: AdmissionQueue<RelayRequest>,
  ) {}

  onModuleInit(): void {
    const relays = this.frames.handlers;
    if (!(relays instanceof ForwardRelays)) return;
    const fastify = this.http.httpAdapter?.getInstance() as FastifyInstance | undefined;
    if (fastify) registerForwardRoute(fastify, this.config, this.fleet, relays);
  }

  onApplicationBootstrap(): void {
    const { cluster } = this.config;
    if (!cluster.redisUrl || !cluster.secret) return;
    const ctx: ForwardContext = {
      secret: cluster.secret,
      replicaId: cluster.replicaId,
      urlOf: (replica) => this.membership.members().find((m) => m.id === replica)?.advertise_url,
      frames: this.dispatcher.frames,
      markFull: (session) => remote.markFull(session),
      confirmCancelled: (session, requestId) => this.fleet.confirmCancelled(session, requestId),
      maxLineBytes: 2 * this.config.connections.maxWorkerFrameBytes,
    };
    const remote = new RemoteWorkers(
      this.fleet,
      (replica, id, session) => new RemoteChannel(ctx, replica, id, session),
      () => this.clock.now(),
    );
    const board = new RedisFleetBoard(cluster.redisUrl, cluster.replicaId, cluster.redisTimeoutMs);
    this.sync = new FleetSync(this.fleet, remote, board, this.queue, this.membership, this.clock, {
      replicaId: cluster.replicaId,
      flushMs: FLUSH_MS,
      fullEveryMs: Math.max(1000, Math.floor(cluster.replicaTimeoutMs / 3)),
    });
    this.sync.start();
  }

  async onModuleDestroy(): Promise<void> {
    await this.sync?.stop();
  }
}
