import { ApiKeysModule } from '../api-keys/api-keys.module';
import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { DispatchModule } from '../dispatch/dispatch.module';
import { ProvidersModule } from '../providers/providers.module';
import { QueueModule } from '../queue/queue.module';
import { FleetModule } from '../fleet/fleet.module';
import { RoutingModule } from '../routing/routing.module';
import { TenancyModule } from '../tenancy/tenancy.module';
import { LifecycleModule } from '../lifecycle/lifecycle.module';
import { ClusterModule } from '../cluster/cluster.module';
import { AdminController } from './admin.controller';
import { ClusterController } from './cluster.controller';
import { AuditController } from './audit.controller';
import { CapabilitiesController } from './capabilities.controller';
import { CapabilitiesService } from './capabilities.service';
import { PoolsController } from './pools.controller';
import { PoolsService } from './pools.service';
import { ReloadController } from './reload.controller';
import { ShutdownCoordinator } from './shutdown-coordinator.service';
import { CordonSync } from './cordon-sync';

@Module({
  imports: [AuthModule, DispatchModule, ProvidersModule, QueueModule, FleetModule, RoutingModule, ApiKeysModule, TenancyModule, LifecycleModule, ClusterModule],
  controllers: [AdminController, AuditController, CapabilitiesController, ClusterController, PoolsController, ReloadController],
  providers: [ShutdownCoordinator, CapabilitiesService, PoolsService, CordonSync],
})
export class ControlPlaneModule {}
