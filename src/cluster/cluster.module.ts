import { Global, Inject, Module, OnApplicationBootstrap, OnApplicationShutdown, Optional } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { Server } from 'node:net';
import { APP_CONFIG, AppConfig } from '../config';
import { CLOCK, Clock } from '../common/clock';
import { redisHostPort } from '../common/redis-url';
import { appVersion } from '../observability/app-version';
import { AppLogger } from '../observability/logger';
import { MetricsService } from '../observability/metrics.service';
import { resolveAdvertiseUrl } from './advertise-url';
import { HeartbeatMembership } from './heartbeat-membership';
import { Membership } from './membership.port';
import { RedisMembershipStore } from './redis-membership-store';
import { SingleProcessMembership } from './single-process-membership';
import { ClusterBus } from './cluster-bus.port';
import { createClusterBus } from './cluster-bus.factory';

/** The membership the configuration asks for: Redis heartbeats in cluster mode, this process alone otherwise. */
export function createMembership(config: AppConfig, clock: Clock, logger?: AppLogger): Membership {
  const { cluster } = config;
  if (!cluster.redisUrl) return new SingleProcessMembership(cluster.replicaId, appVersion(), clock.now(), () => clock.now());
  const store = new RedisMembershipStore({ url: cluster.redisUrl, commandTimeoutMs: cluster.redisTimeoutMs });
  return new HeartbeatMembership({
    store,
    clock,
    replicaId: cluster.replicaId,
    version: appVersion(),
    replicaTimeoutMs: cluster.replicaTimeoutMs,
    storeName: `Redis at ${redisHostPort(cluster.redisUrl)}`,
    logger,
  });
}

/**
 * Provides the Membership port everywhere. The replica announces itself once its listener
 * listens (the advertised port may be picked at listen time), and leaves when the app closes.
 */
@Global()
@Module({
  providers: [
    {
      provide: Membership,
      inject: [APP_CONFIG, CLOCK, { token: AppLogger, optional: true }],
      useFactory: createMembership,
    },
    { provide: ClusterBus, inject: [APP_CONFIG, { token: AppLogger, optional: true }], useFactory: createClusterBus },
  ],
  exports: [Membership, ClusterBus],
})
export class ClusterModule implements OnApplicationBootstrap, OnApplicationShutdown {
  constructor(
    private readonly membership: Membership,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly http: HttpAdapterHost,
    private readonly bus: ClusterBus,
    @Optional() private readonly metrics?: MetricsService,
  ) {}

  onApplicationBootstrap(): void {
    if (this.membership.enabled) this.metrics?.setClusterSource(this.membership);
    const server = this.http.httpAdapter?.getHttpServer() as Server | undefined;
    if (!server) return;
    const announce = () => {
      const url = resolveAdvertiseUrl({
        advertiseUrl: this.config.cluster.advertiseUrl,
        listenAddr: this.config.cluster.listenAddr,
        listenHost: this.config.listenHost,
        tls: this.config.tls !== undefined,
        bound: server.address(),
      });
      if (url) this.membership.start(url);
    };
    if (server.listening) announce();
    else server.once('listening', announce);
  }

  /** After the drain (Nest calls this last): the replica stays a member while it finishes its work. */
  async onApplicationShutdown(): Promise<void> {
    await this.membership.stop();
    await this.bus.close();
  }
}
