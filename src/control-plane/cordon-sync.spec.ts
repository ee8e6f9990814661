import { BUS_TOPICS, ClusterBus, ClusterBusHandler } from '../cluster/cluster-bus.port';
import type { ConfigReloadService, SignalReloadObserver } from '../config/config-reload.service';
import type { Provider, ProvidersService } from '../providers/providers.service';
import { CordonSync } from './cordon-sync';
import type { PoolsService } from './pools.service';

/** A bus that records what is published and delivers what the test sends as another replica. */
class FakeBus extends ClusterBus {
  readonly enabled = true;
  readonly published: Array<[string, unknown]> = [];
  private readonly handlers = new Map<string, ClusterBusHandler>();
  publish(topic: string, data: unknown): void {
    this.published.push([topic, data]);
  }
  subscribe(topic: string, handler: ClusterBusHandler): () => void {
    this.handlers.set(topic, handler);
    return () => this.handlers.delete(topic);
  }
  onResync(): () => void {
    return () => undefined;
  }
  async close(): Promise<void> {}
  async deliver(topic: string, data: unknown): Promise<void> {
    await this.handlers.get(topic)?.(data, 'gw-other');
  }
}

function harness() {
  const bus = new FakeBus();
  const calls: unknown[][] = [];
  const pool = { name: 'p1', cordon: undefined } as unknown as Provider;
  const pools = {
    cordonPool: (...args: unknown[]) => calls.push(['cordonPool', ...args]),
    cordonName: (...args: unknown[]) => calls.push(['cordonName', ...args]),
    uncordonName: (...args: unknown[]) => (calls.push(['uncordonName', ...args]), true),
  } as unknown as PoolsService;
  const providers = {
    get: (name: string) => (name === 'p1' ? pool : undefined),
    uncordon: (name: string) => calls.push(['uncordon', name]),
  } as unknown as ProvidersService;
  let observer: SignalReloadObserver | undefined;
  const reloads = {
    reload: async (trigger: string) => (calls.push(['reload', trigger]), {}),
    observeSignalReloads: (o: SignalReloadObserver) => (observer = o),
  } as unknown as ConfigReloadService;
  const sync = new CordonSync(pools, providers, reloads, bus);
  sync.onModuleInit();
  return { bus, calls, pool, sync, signal: (e: Parameters<SignalReloadObserver>[0]) => observer!(e) };
}

describe('CordonSync', () => {
  it("applies another replica's pool and worker-name drains and undrains to this replica", async () => {
    const h = harness();
    await h.bus.deliver(BUS_TOPICS.poolCordon, { pool: 'p1', drain: true, deadlineMs: 5000, reason: 'maintenance' });
    await h.bus.deliver(BUS_TOPICS.poolCordon, { pool: 'p1', drain: false });
    await h.bus.deliver(BUS_TOPICS.workerCordon, { provider: 'p1', name: 'gpu-1', workerId: 'w-9', drain: true, timeoutMs: 3000, reason: 'swap' });
    await h.bus.deliver(BUS_TOPICS.workerCordon, { provider: 'p1', name: 'gpu-1', drain: false });
    expect(h.calls).toEqual([
      ['cordonPool', h.pool, 5000, 'maintenance'],
      ['uncordon', 'p1'],
      ['cordonName', 'p1', 'gpu-1', 'w-9', 3000, 'swap'],
      ['uncordonName', 'p1', 'gpu-1'],
    ]);
    expect(h.bus.published).toEqual([]); // applying never announces again
  });

  it('ignores unknown pools and malformed messages', async () => {
    const h = harness();
    for (const data of [null, 'x', { pool: 'nope', drain: true, deadlineMs: 1 }, { pool: 'p1', drain: true, deadlineMs: -1 }, { provider: 'p1' }]) {
      await h.bus.deliver(BUS_TOPICS.poolCordon, data);
      await h.bus.deliver(BUS_TOPICS.workerCordon, data);
    }
    await h.bus.deliver(BUS_TOPICS.workerCordon, { provider: 'p1', name: 'n', drain: true, timeoutMs: 5 }); // no worker id
    expect(h.calls).toEqual([]);
  });

  it('an accepted SIGHUP reload is announced; a refused one is not; an announced reload reloads this replica', async () => {
    const h = harness();
    await h.signal({ trigger: 'SIGHUP', result: {} as never });
    await h.signal({ trigger: 'SIGHUP', problems: ['bad'] });
    expect(h.bus.published).toEqual([[BUS_TOPICS.reload, { trigger: 'SIGHUP' }]]);
    await h.bus.deliver(BUS_TOPICS.reload, { trigger: 'POST /admin/reload' });
    expect(h.calls).toEqual([['reload', 'POST /admin/reload on replica gw-other']]);
  });
});
