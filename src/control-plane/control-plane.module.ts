import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { DispatchModule } from '../dispatch/dispatch.module';
import { ProvidersModule } from '../providers/providers.module';
import { QueueModule } from '../queue/queue.module';
import { RegistryModule } from '../registry/registry.module';
import { RoutingModule } from '../routing/routing.module';
import { AdminController } from './admin.controller';
import { ShutdownCoordinator } from './shutdown-coordinator.service';

@Module({
  imports: [AuthModule, DispatchModule, ProvidersModule, QueueModule, RegistryModule, RoutingModule],
  controllers: [AdminController],
  providers: [ShutdownCoordinator],
})
export class ControlPlaneModule {}
