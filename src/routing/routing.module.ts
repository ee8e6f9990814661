import { Module } from '@nestjs/common';
import { ProvidersModule } from '../providers/providers.module';
import { RegistryModule } from '../registry/registry.module';
import { RoutingConfigHolder } from './routing-config-holder';
import { Router } from './router.service';

@Module({
  imports: [ProvidersModule, RegistryModule],
  providers: [RoutingConfigHolder, Router],
  exports: [RoutingConfigHolder, Router],
})
export class RoutingModule {}
