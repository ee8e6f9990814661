import { DynamicModule, Module } from '@nestjs/common';
import { AppConfig, ConfigModule } from './config';
import { CommonModule } from './common/common.module';
import { DatabaseModule } from './database/database.module';
import { ObservabilityModule } from './observability/observability.module';
import { ProvidersModule } from './providers/providers.module';
import { RegistryModule } from './registry/registry.module';
import { FleetModule } from './fleet/fleet.module';
import { AuthModule } from './auth/auth.module';
import { QueueModule } from './queue/queue.module';
import { DispatchModule } from './dispatch/dispatch.module';
import { WorkerLinkModule } from './worker-link/worker-link.module';
import { ClusterLinkModule } from './cluster-link/cluster-link.module';
import { InferenceModule } from './inference/inference.module';
import { ControlPlaneModule } from './control-plane/control-plane.module';
import { HealthModule } from './health/health.module';
import { RelayHealthSnapshot } from './control-plane/relay-health-snapshot';
import { RateLimitModule } from './rate-limit/rate-limit.module';
import { UsageModule } from './usage/usage.module';
import { TenancyModule } from './tenancy/tenancy.module';
import { ApiKeysModule } from './api-keys/api-keys.module';
import { DashboardModule } from './dashboard/dashboard.module';
import { ArtifactsModule } from './artifacts/artifacts.module';
import { TasksModule } from './tasks/tasks.module';
import { GovernanceModule } from './governance/governance.module';
import { LifecycleModule } from './lifecycle/lifecycle.module';

@Module({})
export class AppModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot(config),
        CommonModule,
        ObservabilityModule,
        RateLimitModule,
        DatabaseModule.forRoot(config),
        UsageModule,
        ProvidersModule,
        RegistryModule,
        FleetModule,
        AuthModule,
        TenancyModule,
        ApiKeysModule,
        ArtifactsModule,
        QueueModule,
        DispatchModule,
        ClusterLinkModule,
        WorkerLinkModule,
        InferenceModule,
        TasksModule,
        ControlPlaneModule,
        GovernanceModule,
        LifecycleModule,
        DashboardModule,
        HealthModule.withSnapshot({
          imports: [QueueModule, FleetModule, ProvidersModule],
          useClass: RelayHealthSnapshot,
        }),
      ],
    };
  }
}
