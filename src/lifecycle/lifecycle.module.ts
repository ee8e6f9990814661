import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { LoadTaskEntity } from './load-task.entity';
import { AuthModule } from '../auth/auth.module';
import { GovernanceModule } from '../governance/governance.module';
import { ProvidersModule } from '../providers/providers.module';
import { FleetModule } from '../fleet/fleet.module';
import { AuditedAdminGuard } from './audited-admin.guard';
import { LifecycleController } from './lifecycle.controller';
import { LifecycleService } from './lifecycle.service';
import { LoadingModels } from './loading-models';
import { LoadTaskStore } from './load-task-store';
import { TypeOrmLoadTaskStore } from './load-task-store.typeorm';

/**
 * Model load, unload and cache flush relayed to workers (`/v1/models/load`, `/v1/models/unload`,
 * `/v1/cache/flush`), the workers' `lifecycle_status` reports (handed in by worker-link) and the
 * models being loaded (for `/v1/capabilities`). Needs the global DatabaseModule.
 */
@Module({
  imports: [AuthModule, GovernanceModule, ProvidersModule, FleetModule, TypeOrmModule.forFeature([LoadTaskEntity])],
  controllers: [LifecycleController],
  providers: [
    LifecycleService,
    { provide: LoadingModels, useExisting: LifecycleService },
    AuditedAdminGuard,
    TypeOrmLoadTaskStore,
    { provide: LoadTaskStore, useExisting: TypeOrmLoadTaskStore },
  ],
  exports: [LifecycleService, LoadingModels],
})
export class LifecycleModule {}
