import { Module } from '@nestjs/common';
import { ProvidersModule } from '../providers/providers.module';
import { Fleet } from './fleet.service';
import { FleetGauges } from './fleet-gauges';

/** The workers connected to this process (sessions, leases, drains, cordons) and their gauges. */
@Module({ imports: [ProvidersModule], providers: [Fleet, FleetGauges], exports: [Fleet] })
export class FleetModule {}
