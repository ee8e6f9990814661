import { Module } from '@nestjs/common';
import { ProvidersModule } from '../providers/providers.module';
import { FleetModule } from '../fleet/fleet.module';
import { QueueModule } from '../queue/queue.module';
import { RoutingModule } from '../routing/routing.module';
import { Dispatcher } from './dispatcher.service';
import { ProviderChanges } from './provider-changes';
import { MetricsObserver } from './observers/metrics.observer';
import { PoolStatsObserver } from './observers/pool-stats.observer';
import { RequestObservers } from './observers/request-observers';
import { UsageObserver } from './observers/usage.observer';
import { ServiceTimeObserver } from './observers/service-time.observer';
import { TraceObserver } from './observers/trace.observer';
import { TelemetryModule } from '../telemetry/telemetry.module';

@Module({
  imports: [ProvidersModule, FleetModule, QueueModule, RoutingModule, TelemetryModule],
  providers: [Dispatcher, ProviderChanges, MetricsObserver, UsageObserver, PoolStatsObserver, ServiceTimeObserver, TraceObserver, RequestObservers],
  exports: [Dispatcher],
})
export class DispatchModule {}
