import { Module } from '@nestjs/common';
import { ProvidersModule } from '../providers/providers.module';
import { RegistryModule } from '../registry/registry.module';
import { QueueModule } from '../queue/queue.module';
import { RoutingModule } from '../routing/routing.module';
import { Dispatcher } from './dispatcher.service';

@Module({
  imports: [ProvidersModule, RegistryModule, QueueModule, RoutingModule],
  providers: [Dispatcher],
  exports: [Dispatcher],
})
export class DispatchModule {}
