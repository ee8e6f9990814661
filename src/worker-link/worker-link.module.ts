import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { DispatchModule } from '../dispatch/dispatch.module';
import { ProvidersModule } from '../providers/providers.module';
import { FleetModule } from '../fleet/fleet.module';
import { LifecycleModule } from '../lifecycle/lifecycle.module';
import { WorkerGateway } from './worker.gateway';

@Module({ imports: [AuthModule, DispatchModule, ProvidersModule, FleetModule, LifecycleModule], providers: [WorkerGateway] })
export class WorkerLinkModule {}
