import { DynamicModule, Module, ModuleMetadata, Provider, Type } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { PrometheusModule } from '@willsoto/nestjs-prometheus';
import { HealthController } from './health.controller';
import { HEALTH_SNAPSHOT, HealthSnapshot } from '../observability/health-snapshot';
import { LifecycleHealthIndicator } from './lifecycle.health';
import { MetricsController } from './metrics.controller';
import { MetricsListener } from './metrics-listener';

export interface HealthSnapshotSource {
  /** Modules exporting what the snapshot class needs (e.g. the queue and registry modules). */
  imports?: ModuleMetadata['imports'];
  useClass?: Type<HealthSnapshot>;
  useExisting?: unknown;
  useFactory?: (...deps: never[]) => HealthSnapshot;
  inject?: Array<Type<unknown> | string | symbol>;
}

/**
 * The observability edge: GET /health, /health/live, /health/ready and GET /metrics (served from
 * the registry of the global ObservabilityModule). Imported plainly, /health reports zero workers
 * and an empty queue unless some global module provides HEALTH_SNAPSHOT; `withSnapshot` wires one in.
 */
@Module({
  imports: [
    TerminusModule.forRoot({ errorLogStyle: 'json' }),
    // The module's own default-metrics and controller use prom-client's global registry, which a
    // second app in the same process would collide with; ours serve the app's registry instead.
    PrometheusModule.register({ controller: MetricsController, defaultMetrics: { enabled: false } }),
  ],
  controllers: [HealthController],
  providers: [LifecycleHealthIndicator, MetricsListener],
  exports: [MetricsListener],
})
export class HealthModule {
  static withSnapshot(source: HealthSnapshotSource): DynamicModule {
    return {
      module: HealthModule,
      imports: source.imports ?? [],
      providers: [snapshotProvider(source)],
    };
  }
}

function snapshotProvider(source: HealthSnapshotSource): Provider {
  if (source.useClass) return { provide: HEALTH_SNAPSHOT, useClass: source.useClass };
  if (source.useExisting) return { provide: HEALTH_SNAPSHOT, useExisting: source.useExisting };
  if (source.useFactory) return { provide: HEALTH_SNAPSHOT, useFactory: source.useFactory, inject: source.inject ?? [] };
  throw new Error('HealthModule.withSnapshot needs useClass, useExisting or useFactory');
}
