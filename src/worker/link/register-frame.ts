import { Features, PROTOCOL_VERSION, RegisterMessage } from '../../protocol';
import type { WorkerConfig } from '../config';
import type { ModelCatalog } from '../models/model-catalog';

/**
 * The `register` frame the daemon opens each session with: its models and their hints, its load,
 * what its backend's probe found, and the protocol extensions it asks for — each only when it can
 * use it (a gateway that does not know one simply leaves it out of `register_ack`).
 */
export function registerFrame(config: WorkerConfig, models: string[], catalog: ModelCatalog, currentLoad: number, cacheStats: boolean): RegisterMessage {
  const probed = catalog.probe;
  return {
    type: 'register',
    worker_name: config.workerName,
    models,
    max_concurrent: config.maxConcurrency,
    protocol_version: PROTOCOL_VERSION,
    current_load: currentLoad,
    capabilities: catalog.capabilitiesFor(models),
    endpoints: probed?.endpoints,
    priority: config.priority,
    runner: probed?.runner,
    runner_capabilities: probed?.runnerCapabilities,
    features: [
      Features.RESPONSE_START,
      Features.CANCEL_REASONS,
      ...(config.modelLifecycle ? [Features.MODEL_LIFECYCLE] : []),
      ...(cacheStats ? [Features.CACHE_STATS] : []),
      Features.GPU_TIME,
      ...(probed?.runnerCapabilities ? [Features.RUNNER_CAPABILITIES] : []),
    ],
  };
}
