import { collectDefaultMetrics, Registry } from 'prom-client';

/**
 * One registry per application instance instead of prom-client's global one, so several gateways
 * in one process (integration tests) never collide with "metric already registered".
 */
export function createMetricsRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return registry;
}
