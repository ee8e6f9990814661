import { Global, Module, OnModuleDestroy } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config';
import { CLOCK, Clock } from '../common/clock';
import { REDIS_HEALTH } from '../observability/health-snapshot';
import { AppLogger } from '../observability/logger';
import { MetricsService } from '../observability/metrics.service';
import { MemoryRateLimiter } from './memory-rate-limiter';
import { RateLimiter } from './rate-limiter';
import { RedisRateLimiter } from './redis-rate-limiter';

/** Builds the limiter the config asks for: Redis when REDIS_URL is set, in-memory otherwise. */
export function createRateLimiter(config: AppConfig, clock: Clock, metrics?: MetricsService, logger?: AppLogger): RateLimiter {
  if (!config.redisUrl) return new MemoryRateLimiter(clock);
  // Connects in the background: boot never waits for Redis, decisions are local until it answers.
  // In cluster mode no request waits on Redis beyond CLUSTER_REDIS_TIMEOUT_MS (docs/cluster.md).
  const commandTimeoutMs = config.cluster.redisUrl ? config.cluster.redisTimeoutMs : undefined;
  return new RedisRateLimiter({ url: config.redisUrl, clock, metrics, logger, commandTimeoutMs });
}

/**
 * Provides the RateLimiter port (inject the abstract class `RateLimiter`) to every module, and
 * REDIS_HEALTH for GET /health. The Redis connection is closed when the app shuts down.
 */
@Global()
@Module({
  providers: [
    {
      provide: RateLimiter,
      inject: [APP_CONFIG, CLOCK, { token: MetricsService, optional: true }, { token: AppLogger, optional: true }],
      useFactory: createRateLimiter,
    },
    { provide: REDIS_HEALTH, useExisting: RateLimiter },
  ],
  exports: [RateLimiter, REDIS_HEALTH],
})
export class RateLimitModule implements OnModuleDestroy {
  constructor(private readonly limiter: RateLimiter) {}

  async onModuleDestroy(): Promise<void> {
    await this.limiter.close();
  }
}
