import { Module } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config';
import { ApiKeysModule } from '../api-keys/api-keys.module';
import { DispatchModule } from '../dispatch/dispatch.module';
import { FleetModule } from '../fleet/fleet.module';
import { QueueModule } from '../queue/queue.module';
import { TenancyModule } from '../tenancy/tenancy.module';
import { InMemorySessionBudgets, SessionBudgetStore } from './session-budgets';
import { TaskRuntime } from './task-runtime';
import { TasksController } from './tasks.controller';
import { TasksService } from './tasks.service';

/**
 * The task API (`/v1/tasks`): admission-checked tasks on the same queue, routing and workers as
 * the inference routes, with SSE task events, race-free cancel and session budgets. Its artifacts
 * go through the `JOB_ARTIFACTS` port when a registry provides it.
 */
@Module({
  imports: [DispatchModule, FleetModule, QueueModule, TenancyModule, ApiKeysModule],
  controllers: [TasksController],
  providers: [
    TasksService,
    TaskRuntime,
    { provide: SessionBudgetStore, useFactory: (config: AppConfig) => new InMemorySessionBudgets(config.tasks.sessionTtlMs), inject: [APP_CONFIG] },
  ],
})
export class TasksModule {}
