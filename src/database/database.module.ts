import { DynamicModule, Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AppConfig } from '../config';
import { ProviderStore } from '../providers/provider-store';
import { TypeOrmProviderStore } from '../providers/provider-store.typeorm';
import { StaleCleanupService } from '../registry/stale-cleanup.service';
import { WorkerRecords } from '../registry/worker-records.port';
import { TypeOrmWorkerRecords } from '../registry/worker-records.service';
import { buildDataSourceOptions, ENTITIES } from './data-source-options';

/**
 * Persistence: the TypeORM DataSource for DATABASE_URL (migrations run at boot, never
 * `synchronize`), repositories for every entity, and the stores behind the persistence ports.
 * Global, so `ProviderStore`, `WorkerRecords`, `DataSource` and `@InjectRepository(...)` work anywhere.
 */
@Global()
@Module({})
export class DatabaseModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: DatabaseModule,
      imports: [
        TypeOrmModule.forRoot({
          ...buildDataSourceOptions(config.databaseUrl),
          migrationsRun: true,
          // A database that is still starting gets a few seconds; a wrong URL fails the boot quickly.
          retryAttempts: 3,
          retryDelay: 2000,
        }),
        TypeOrmModule.forFeature(ENTITIES),
      ],
      providers: [
        TypeOrmProviderStore,
        { provide: ProviderStore, useExisting: TypeOrmProviderStore },
        TypeOrmWorkerRecords,
        { provide: WorkerRecords, useExisting: TypeOrmWorkerRecords },
        StaleCleanupService,
      ],
      exports: [TypeOrmModule, ProviderStore, WorkerRecords, TypeOrmWorkerRecords, StaleCleanupService],
    };
  }
}
