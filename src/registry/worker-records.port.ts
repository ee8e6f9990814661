/** What the relay tells persistence about a worker connection. */
export interface WorkerConnectedRecord {
  id: string;
  provider: string;
  name: string;
  models: string[];
  maxConcurrent: number;
  remoteAddress: string;
  connectedAt: number;
}

/**
 * Persistence port for worker records. Every method is fire-and-forget and must never block or
 * throw on the request path: connect/disconnect are written promptly in the background,
 * heartbeats are coalesced in memory and flushed in batches (write-behind).
 */
export abstract class WorkerRecords {
  abstract recordConnected(record: WorkerConnectedRecord): void;
  abstract recordModels(workerId: string, models: string[]): void;
  abstract recordHeartbeat(workerId: string, at: number): void;
  abstract recordDisconnected(workerId: string, at: number): void;
  /**
   * True when a worker of this provider served `model` recently (connected now, or disconnected
   * within the configured window), answered from memory. Used to queue rather than 404.
   */
  abstract recentlyKnowsModel(provider: string, model: string): boolean;
}
