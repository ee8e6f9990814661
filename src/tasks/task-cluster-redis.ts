import Redis from 'ioredis';

/** Keys of the task API in the cluster's Redis. */
export const TASK_KEY_PREFIX = 'switchboard:cluster:tasks:';

/**
 * The cluster's Redis as the task API uses it (cluster mode only): where each task runs, and the
 * shared session budgets. Fail fast like the membership store: nothing queues while disconnected,
 * a silent server holds a command for `CLUSTER_REDIS_TIMEOUT_MS` at most, reconnecting never stops.
 */
export class TaskClusterRedis {
  readonly client: Redis;
  private closed = false;

  constructor(url: string, commandTimeoutMs: number) {
    this.client = new Redis(url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      commandTimeout: commandTimeoutMs,
      connectTimeout: Math.max(1000, commandTimeoutMs),
      disconnectTimeout: 200,
      retryStrategy: (attempt) => Math.min(50 * 2 ** Math.min(attempt - 1, 16), 2000),
      lazyConnect: true,
      connectionName: 'switchboard-tasks',
    });
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
