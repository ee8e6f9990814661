import { Module } from '@nestjs/common';
import { CLOCK, systemClock } from '../common/clock';
import { ProvidersModule } from '../providers/providers.module';
import { RegistryModule } from '../registry/registry.module';
import { QueueModule } from '../queue/queue.module';
import { Dispatcher } from './dispatcher.service';

@Module({
  imports: [ProvidersModule, RegistryModule, QueueModule],
  providers: [Dispatcher, { provide: CLOCK, useValue: systemClock }],
  exports: [Dispatcher, CLOCK],
})
export class DispatchModule {}
