import { ClusterBus, ClusterBusHandler } from '../../src/cluster/cluster-bus.port';

/** A cluster bus whose messages and resyncs a unit test delivers by hand. */
export class HandBus extends ClusterBus {
  readonly enabled = true;
  readonly handlers = new Map<string, ClusterBusHandler>();
  readonly resyncs: Array<() => void | Promise<void>> = [];
  publish(): void {}
  subscribe(topic: string, handler: ClusterBusHandler): () => void {
    this.handlers.set(topic, handler);
    return () => this.handlers.delete(topic);
  }
  onResync(handler: () => void | Promise<void>): () => void {
    this.resyncs.push(handler);
    return () => undefined;
  }
  async close(): Promise<void> {}
  deliver(topic: string, data: unknown): void {
    void this.handlers.get(topic)?.(data, 'other');
  }
}
