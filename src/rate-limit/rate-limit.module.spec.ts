import { loadConfig } from '../config';
import { systemClock } from '../common/clock';
import { createRateLimiter } from './rate-limit.module';
import { RedisRateLimiter } from './redis-rate-limiter';

/** The ioredis client's command timeout: how long a rate-limit decision can wait on Redis. */
const commandTimeoutOf = (limiter: unknown) => (limiter as { client: { options: { commandTimeout?: number } } }).client.options.commandTimeout;

describe('createRateLimiter', () => {
  it('in cluster mode, no decision waits on Redis beyond CLUSTER_REDIS_TIMEOUT_MS; alone, the limiter keeps its own bound', async () => {
    const cluster = loadConfig({
      CLUSTER_REDIS_URL: 'redis://127.0.0.1:1',
      DATABASE_URL: 'postgres://sb@127.0.0.1:5432/sb',
      CLUSTER_SECRET: 'x'.repeat(32),
      CLUSTER_REDIS_TIMEOUT_MS: '120',
    });
    const clustered = createRateLimiter(cluster, systemClock);
    const alone = createRateLimiter(loadConfig({ REDIS_URL: 'redis://127.0.0.1:1' }), systemClock);
    try {
      expect(clustered).toBeInstanceOf(RedisRateLimiter);
      expect(commandTimeoutOf(clustered)).toBe(120);
      expect(commandTimeoutOf(alone)).toBe(500);
    } finally {
      await Promise.all([clustered.close(), alone.close()]);
    }
  });
});
