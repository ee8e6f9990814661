import { Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { RetentionTasks } from '../common/retention-tasks';
import { StaleCleanupService } from './stale-cleanup.service';
import { WorkerRecordEntity } from './worker-record.entity';
import { WorkerRecords } from './worker-records.port';
import { TypeOrmWorkerRecords } from './worker-records.service';

/**
 * Worker records (the write-behind store behind `WorkerRecords`) and the cleanup job every
 * feature adds its retention to. Global, for two reasons: the router, the dispatcher and four
 * features' retention steps inject these without importing a module (the retention steps take
 * `RetentionTasks` as `@Optional`, so a missing import would silently drop their pruning),
 * and Nest runs a global module's shutdown hooks after the feature modules', so disconnects
 * recorded while workers drain are still written before the DataSource closes.
 */
@Global()
@Module({
  imports: [TypeOrmModule.forFeature([WorkerRecordEntity])],
  providers: [
    TypeOrmWorkerRecords,
    { provide: WorkerRecords, useExisting: TypeOrmWorkerRecords },
    StaleCleanupService,
    { provide: RetentionTasks, useExisting: StaleCleanupService },
  ],
  exports: [WorkerRecords, TypeOrmWorkerRecords, StaleCleanupService, RetentionTasks],
})
export class WorkerRecordsModule {}

/** Worker records and the cleanup job; the live workers are the Fleet's (src/fleet). */
@Module({ imports: [WorkerRecordsModule], exports: [WorkerRecordsModule] })
export class RegistryModule {}
