import { Global, Module } from '@nestjs/common';
import { PrometheusModule } from '@willsoto/nestjs-prometheus';
import { Registry } from 'prom-client';
import { APP_CONFIG, AppConfig } from '../config';
import { LifecycleState } from './lifecycle-state';
import { AppLogger, appLoggerFor, createLogger } from './logger';
import { MetricsController } from './metrics.controller';
import { createMetricsRegistry } from './metrics-registry';
import { MetricsService } from './metrics.service';

/** Metrics (GET /metrics), the structured logger and lifecycle state, available to every module. */
@Global()
@Module({
  imports: [
    // The module's own default-metrics and controller use prom-client's global registry, which a
    // second app in the same process would collide with; ours serve the app's registry instead.
    PrometheusModule.register({ controller: MetricsController, defaultMetrics: { enabled: false } }),
  ],
  providers: [
    { provide: Registry, useFactory: createMetricsRegistry },
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
