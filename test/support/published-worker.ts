import type { PublishedWorker } from '../../src/fleet/published-worker';

/** A worker as another replica (`gw-b` unless `over` says) publishes it on the fleet board. */
export function publishedWorker(id: string, over: Partial<PublishedWorker> = {}): PublishedWorker {
  return {
    id,
    name: `n-${id}`,
    provider: 'local',
    replica: 'gw-b',
    models: ['m1'],
    held_out: [],
    capabilities: {},
    endpoints: null,
    priority: null,
    max_concurrent: 2,
    load: 0,
    draining: false,
    connected_at: 1,
    last_seen_at: 1,
    health: null,
    features: ['response_start'],
    seen_ago_ms: 0,
    ...over,
  };
}
