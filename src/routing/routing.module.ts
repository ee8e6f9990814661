import { Module } from '@nestjs/common';
import { ProvidersModule } from '../providers/providers.module';
import { FleetModule } from '../fleet/fleet.module';
import { RoutingConfigHolder } from './routing-config-holder';
import { Router } from './router.service';
import { CacheGauges } from './cache-gauges';

@Module({
  imports: [ProvidersModule, FleetModule],
  providers: [RoutingConfigHolder, Router, CacheGauges],
  exports: [RoutingConfigHolder, Router],
})
export class RoutingModule {}
