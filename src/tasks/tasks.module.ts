import { Inject, Module, OnModuleDestroy, Optional } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { APP_CONFIG, AppConfig } from '../config';
import { CLOCK, Clock } from '../common/clock';
import { ApiKeysModule } from '../api-keys/api-keys.module';
import { InternalClusterGuard } from '../cluster/internal-cluster.guard';
import { Membership } from '../cluster/membership.port';
import { DispatchModule } from '../dispatch/dispatch.module';
import { FleetModule } from '../fleet/fleet.module';
import { QueueModule } from '../queue/queue.module';
import { TenancyModule } from '../tenancy/tenancy.module';
import { InternalTasksController } from './internal-tasks.controller';
import { RedisSessionBudgets } from './redis-session-budgets';
import { RemoteTasks } from './remote-tasks';
import { InMemorySessionBudgets, SessionBudgetStore } from './session-budgets';
import { TaskClusterRedis } from './task-cluster-redis';
import { selfHolder } from './task-holder';
import { LocalTaskLocator, RedisTaskLocator, TaskLocator } from './task-locator';
import { TaskRuntime } from './task-runtime';
import { TasksController } from './tasks.controller';
import { TasksService } from './tasks.service';

/** The cluster's Redis for tasks; null outside cluster mode. */
const TASK_REDIS = Symbol('TASK_REDIS');

/**
 * The task API (`/v1/tasks`): admission-checked tasks on the same queue, routing and workers as
 * the inference routes, with SSE task events, race-free cancel and session budgets. Its artifacts
 * go through the `JOB_ARTIFACTS` port when a registry provides it. In cluster mode (docs/tasks.md,
 * "Cluster mode") tasks are found and relayed across replicas and session budgets live in Redis.
 */
@Module({
  imports: [DispatchModule, FleetModule, QueueModule, TenancyModule, ApiKeysModule],
  controllers: [TasksController, InternalTasksController],
  providers: [
    TasksService,
    TaskRuntime,
    RemoteTasks,
    InternalClusterGuard,
    {
      provide: TASK_REDIS,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => (config.cluster.redisUrl ? new TaskClusterRedis(config.cluster.redisUrl, config.cluster.redisTimeoutMs) : null),
    },
    {
      provide: TaskLocator,
      inject: [TASK_REDIS, Membership],
      useFactory: (redis: TaskClusterRedis | null, membership: Membership) =>
        redis ? new RedisTaskLocator(redis.client, () => selfHolder(membership)) : new LocalTaskLocator(),
    },
    {
      provide: SessionBudgetStore,
      inject: [APP_CONFIG, CLOCK, TASK_REDIS, Membership],
      useFactory: (config: AppConfig, clock: Clock, redis: TaskClusterRedis | null, membership: Membership) =>
        redis
          ? new RedisSessionBudgets({ client: redis.client, clock, ttlMs: config.tasks.sessionTtlMs, instance: `${membership.replicaId}/${randomUUID()}` })
          : new InMemorySessionBudgets(config.tasks.sessionTtlMs),
    },
  ],
})
export class TasksModule implements OnModuleDestroy {
  constructor(
    private readonly budgets: SessionBudgetStore,
    @Optional() @Inject(TASK_REDIS) private readonly redis: TaskClusterRedis | null,
  ) {}

  /** Spending not yet sent goes to Redis (bounded by its timeout), then the connection closes. */
  async onModuleDestroy(): Promise<void> {
    if (this.budgets instanceof RedisSessionBudgets) await this.budgets.close();
    await this.redis?.close();
  }
}
