import type { AppConfig } from '../config';
import type { AppLogger } from '../observability/logger';
import { ClusterBus } from './cluster-bus.port';
import { LocalClusterBus } from './local-cluster-bus';
import { RedisClusterBus } from './redis-cluster-bus';

/** The bus the configuration asks for: Redis pub/sub in cluster mode, nobody to tell otherwise. */
export function createClusterBus(config: AppConfig, logger?: AppLogger): ClusterBus {
  const { cluster } = config;
  if (!cluster.redisUrl) return new LocalClusterBus();
  return new RedisClusterBus({
    url: cluster.redisUrl,
    replicaId: cluster.replicaId,
    commandTimeoutMs: cluster.redisTimeoutMs,
    logger: logger ? { log: (m, c) => logger.log(m, c), warn: (m, c) => logger.warn(m, c) } : undefined,
  });
}
