/** What GET /health reports about the relay, without the observability module knowing the relay. */
export interface ProviderHealth {
  name: string;
  enabled: boolean;
  workers: number;
  queue_depth: number;
}

export interface HealthSnapshot {
  workersConnected(): number;
  queueDepth(): number;
  providers(): ProviderHealth[];
}

/** Injection token for the HealthSnapshot the relay provides (see HealthModule.withSnapshot). */
export const HEALTH_SNAPSHOT = Symbol('HEALTH_SNAPSHOT');

/** Used until the relay provides a snapshot: nothing connected, nothing queued. */
export const EMPTY_HEALTH_SNAPSHOT: HealthSnapshot = {
  workersConnected: () => 0,
  queueDepth: () => 0,
  providers: () => [],
};
