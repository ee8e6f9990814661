import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { DispatchModule } from '../dispatch/dispatch.module';
import { ProvidersModule } from '../providers/providers.module';
import { RegistryModule } from '../registry/registry.module';
import { LifecycleModule } from '../lifecycle/lifecycle.module';
import { WorkerGateway } from './worker.gateway';

@Module({ imports: [AuthModule, DispatchModule, ProvidersModule, RegistryModule, LifecycleModule], providers: [WorkerGateway] })
export class WorkerLinkModule {}
