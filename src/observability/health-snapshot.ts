/** What GET /health reports about the relay, without the observability module knowing the relay. */
export interface ProviderHealth {
  name: string;
  enabled: boolean;
  workers: number;
  queue_depth: number;
  /** The provider's queue bound (`max_queue_len`). */
  max_queue_len: number;
}

export interface HealthSnapshot {
  workersConnected(): number;
  queueDepth(): number;
  /** Distinct models served by connected, non-draining workers. */
  modelsLoaded(): number;
  providers(): ProviderHealth[];
}

/** Injection token for the HealthSnapshot the relay provides (see HealthModule.withSnapshot). */
export const HEALTH_SNAPSHOT = Symbol('HEALTH_SNAPSHOT');

/** Used until the relay provides a snapshot: nothing connected, nothing queued. */
export const EMPTY_HEALTH_SNAPSHOT: HealthSnapshot = {
  workersConnected: () => 0,
  queueDepth: () => 0,
  modelsLoaded: () => 0,
  providers: () => [],
};

/** The rate limiter's Redis as GET /health shows it: host:port only, never credentials. */
export interface RedisHealth {
  status: 'ok' | 'down' | 'disabled';
  url?: string;
  /** ISO time of the last ok/down transition. */
  since?: string;
}

/** What the rate-limit module provides under REDIS_HEALTH (RateLimiter implements it). */
export interface RedisHealthSource {
  health(): RedisHealth;
}

/** Injection token for the RedisHealthSource; without one, /health has no `redis` field. */
export const REDIS_HEALTH = Symbol('REDIS_HEALTH');
