import { ClusterBus, ClusterBusHandler } from './cluster-bus.port';

/** One process: there is nobody to tell. No connection, no timer; publishing does nothing. */
export class LocalClusterBus extends ClusterBus {
  readonly enabled = false;

  publish(_topic: string, _data: unknown): void {}

  subscribe(_topic: string, _handler: ClusterBusHandler): () => void {
    return () => undefined;
  }

  onResync(_handler: () => void | Promise<void>): () => void {
    return () => undefined;
  }

  async close(): Promise<void> {}
}
