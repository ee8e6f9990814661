import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { ProvidersModule } from '../providers/providers.module';
import { FleetModule } from '../fleet/fleet.module';
import { LifecycleModule } from '../lifecycle/lifecycle.module';
import { ClusterLinkModule } from '../cluster-link/cluster-link.module';
import { WorkerGateway } from './worker.gateway';

@Module({ imports: [AuthModule, ClusterLinkModule, ProvidersModule, FleetModule, LifecycleModule], providers: [WorkerGateway] })
export class WorkerLinkModule {}
