import { Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { UsageRecordEntity } from './usage-record.entity';
import { AuthModule } from '../auth/auth.module';
import { UsageAggregates } from './usage-aggregates.service';
import { TypeOrmUsageRecorder } from './usage-recorder.service';
import { UsageRecorder } from './usage-recorder.port';
import { UsageRetention } from './usage-retention.service';
import { UsageController } from './usage.controller';
import { QueueModule } from '../queue/queue.module';

/**
 * Usage records for chargeback: the write-behind recorder behind the `UsageRecorder` port (the
 * dispatcher records every finished request), their retention (a step of the cleanup job) and
 * `GET /admin/usage`. Registers its entity; needs `DatabaseModule` (the DataSource) and the
 * global `WorkerRecordsModule` (the cleanup job).
 *
 * Global, for two reasons: the dispatcher injects `UsageRecorder` without importing this module,
 * and Nest runs a global module's shutdown hooks after the feature modules', so records of the
 * requests finished while workers drain are still flushed before the DataSource closes.
 */
@Global()
@Module({
  imports: [AuthModule, QueueModule, TypeOrmModule.forFeature([UsageRecordEntity])],
  controllers: [UsageController],
  providers: [TypeOrmUsageRecorder, { provide: UsageRecorder, useExisting: TypeOrmUsageRecorder }, UsageAggregates, UsageRetention],
  exports: [UsageRecorder, TypeOrmUsageRecorder, UsageAggregates, UsageRetention],
})
export class UsageModule {}
