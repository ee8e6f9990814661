import { Global, Module } from '@nestjs/common';
import { Registry } from 'prom-client';
import { APP_CONFIG, AppConfig } from '../config';
import { LifecycleState } from './lifecycle-state';
import { AppLogger, appLoggerFor, createLogger } from './logger';
import { createMetricsRegistry } from './metrics-registry';
import { MetricsService } from './metrics.service';

/**
 * The metrics registry and service, the structured logger and lifecycle state, available to every
 * module. The HTTP side (GET /metrics, /health) is the edge module in `src/health/`.
 */
@Global()
@Module({
  providers: [
    {
      provide: Registry,
      inject: [{ token: APP_CONFIG, optional: true }],
      // Cluster mode: every series says which replica counted it, so sum() over replicas is right.
      useFactory: (config?: AppConfig) => createMetricsRegistry(config?.cluster.redisUrl ? { replica: config.cluster.replicaId } : undefined),
    },
    MetricsService,
    LifecycleState,
    {
      provide: AppLogger,
      inject: [{ token: APP_CONFIG, optional: true }],
      useFactory: (config?: AppConfig) => appLoggerFor(config) ?? createLogger(config?.logLevel ?? 'info'),
    },
  ],
  exports: [Registry, MetricsService, LifecycleState, AppLogger],
})
export class ObservabilityModule {}
