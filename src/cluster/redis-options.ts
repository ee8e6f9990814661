import type { RedisOptions } from 'ioredis';

/**
 * The cluster's Redis connections fail fast: nothing queues while disconnected, a silent server
 * holds a command for `commandTimeoutMs` at most, and reconnecting (50 ms doubling to 2 s) never stops.
 */
export function clusterRedisOptions(commandTimeoutMs: number, connectionName: string, maxReconnectDelayMs = 2000): RedisOptions {
  return {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    commandTimeout: commandTimeoutMs,
    connectTimeout: Math.max(1000, commandTimeoutMs),
    disconnectTimeout: 200,
    retryStrategy: (attempt) => Math.min(50 * 2 ** Math.min(attempt - 1, 16), maxReconnectDelayMs),
    lazyConnect: true,
    connectionName,
  };
}
