import Redis from 'ioredis';
import { clusterRedisOptions } from '../cluster/redis-options';

/** Keys of the task API in the cluster's Redis. */
export const TASK_KEY_PREFIX = 'switchboard:cluster:tasks:';

/**
 * The cluster's Redis as the task API uses it (cluster mode only): where each task runs, and the
 * shared session budgets. Fails fast like every cluster connection (clusterRedisOptions): a silent
 * server holds a command for `CLUSTER_REDIS_TIMEOUT_MS` at most.
 */
export class TaskClusterRedis {
  readonly client: Redis;
  private closed = false;

  constructor(url: string, commandTimeoutMs: number) {
    this.client = new Redis(url, clusterRedisOptions(commandTimeoutMs, 'switchboard-tasks'));
    // Failed reconnects emit 'error': callers see their own command fail, nothing is thrown here.
    this.client.on('error', () => undefined);
    this.client.connect().catch(() => undefined);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.client.status === 'ready') await this.client.quit().catch(() => this.client.disconnect());
    else this.client.disconnect();
  }
}
