import { Global, Inject, Module, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
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
import { ForwardRelays } from './forward-relays';
import { listenInternally } from './internal-listener';
import { LinkServer } from './link-server';
import { linkRequestCap } from './link-protocol';
import { PeerLinks } from './peer-link';
import { WorkerFrames } from './worker-frames';
import type { Server } from 'node:http';
import { FleetSync } from './fleet-sync';
import { ForwardContext, RemoteChannel } from './remote-channel';

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
    LinkServer,
  ],
  exports: [WorkerFrames],
})
export class ClusterLinkModule implements OnApplicationBootstrap, OnApplicationShutdown {
  private sync: FleetSync | undefined;
  private internal: Server | undefined;
  private links: PeerLinks | undefined;
  private stopWatching: (() => void) | undefined;

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

  async onApplicationBootstrap(): Promise<void> {
    const { cluster } = this.config;
    if (!cluster.redisUrl || !cluster.secret) return;
    const fastify = this.http.httpAdapter?.getInstance() as FastifyInstance | undefined;
    // Listening before the replica announces itself (at the public listener's start), so the advertised address answers.
    if (cluster.listenAddr && fastify) this.internal = await listenInternally(cluster.listenAddr, fastify);
    this.links = new PeerLinks(
      {
        secret: cluster.secret,
        replicaId: cluster.replicaId,
        urlOf: (replica) => this.membership.members().find((m) => m.id === replica)?.advertise_url,
        // A worker's frame is capped at its own link; the owner re-serialises it (a chunk's escapes may grow it).
        maxPayload: 2 * this.config.connections.maxWorkerFrameBytes,
      },
      this.clock,
    );
    const links = this.links;
    // A replica that left is not called again. Not while degraded: the membership list is gone then,
    // not the replicas, and what was forwarded to them before finishes over the links.
    this.stopWatching = this.membership.onChange(({ left }) => {
      if (!this.membership.degraded()) left.forEach((replica) => links.forget(replica));
    });
    const ctx: ForwardContext = {
      links: this.links,
      frames: this.dispatcher.frames,
      markFull: (session) => remote.markFull(session),
      confirmCancelled: (session, requestId) => this.fleet.confirmCancelled(session, requestId),
      maxRequestBytes: linkRequestCap(this.config.maxBodyBytes),
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

  /** After the drain: until then the others see this replica's workers (draining) and its relays run. */
  async onApplicationShutdown(): Promise<void> {
    await this.sync?.stop();
    this.stopWatching?.();
    this.links?.closeAll();
    const internal = this.internal;
    if (internal) await new Promise<void>((resolve) => internal.close(() => resolve()));
  }
}
