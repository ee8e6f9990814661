import { Module } from '@nestjs/common';
import { ProvidersModule } from '../providers/providers.module';
import { FleetModule } from '../fleet/fleet.module';
import { RoutingConfigHolder } from './routing-config-holder';
import { Router } from './router.service';

@Module({
  imports: [ProvidersModule, FleetModule],
  providers: [RoutingConfigHolder, Router],
  exports: [RoutingConfigHolder, Router],
})
export class RoutingModule {}
