import { Module } from '@nestjs/common';
import { ProvidersModule } from '../providers/providers.module';
import { RegistryModule } from '../registry/registry.module';
import { Router } from './router.service';

@Module({
  imports: [ProvidersModule, RegistryModule],
  providers: [Router],
  exports: [Router],
})
export class RoutingModule {}
