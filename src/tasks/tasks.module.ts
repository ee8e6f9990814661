import { Inject, Module, OnModuleDestroy, OnModuleInit, Optional } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance } from 'fastify';
import { randomUUID } from 'node:crypto';
import { APP_CONFIG, AppConfig } from '../config';
import { CLOCK, Clock } from '../common/clock';
import { ApiKeysModule } from '../api-keys/api-keys.module';
import { Membership } from '../cluster/membership.port';
import { DispatchModule } from '../dispatch/dispatch.module';
import { FleetModule } from '../fleet/fleet.module';
import { QueueModule } from '../queue/queue.module';
import { TenancyModule } from '../tenancy/tenancy.module';
import { registerInternalTaskRoutes } from './internal-task-routes';
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
  controllers: [TasksController],
  providers: [
    TasksService,
    TaskRuntime,
    RemoteTasks,
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
export class TasksModule implements OnModuleInit, OnModuleDestroy {
  constructor(
    private readonly budgets: SessionBudgetStore,
    private readonly tasks: TasksService,
    private readonly http: HttpAdapterHost,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(CLOCK) private readonly clock: Clock,
    @Optional() @Inject(TASK_REDIS) private readonly redis: TaskClusterRedis | null,
  ) {}

  /** Cluster mode: the internal routes other replicas relay task calls to. */
  onModuleInit(): void {
    if (!this.redis) return;
    const fastify = this.http.httpAdapter?.getInstance() as FastifyInstance | undefined;
    if (fastify) registerInternalTaskRoutes(fastify, this.config, this.clock, this.tasks);
  }

  /** Spending not yet sent goes to Redis (bounded by its timeout), then the connection closes. */
  async onModuleDestroy(): Promise<void> {
    if (this.budgets instanceof RedisSessionBudgets) await this.budgets.close();
    await this.redis?.close();
  }
}
