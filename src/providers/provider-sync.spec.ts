import { HandBus } from '../../test/support/hand-bus';
import { BUS_TOPICS } from '../cluster/cluster-bus.port';
import type { ProviderStore } from './provider-store';
import { ProviderSync } from './provider-sync';
import type { ProvidersService } from './providers.service';

const settle = () => new Promise((r) => setImmediate(r));

/** A replica holding a provider from its configuration and one created through the admin API, neither in the store. */
function replica() {
  const applied: Array<[string, string | undefined]> = [];
  const providers = {
    list: () => [
      { name: 'from-config', source: 'config' },
      { name: 'from-admin', source: 'admin' },
    ],
    applyStored: (name: string, record: { name: string } | undefined) => void applied.push([name, record?.name]),
  };
  const stored = new Map<string, { name: string }>();
  const store = { find: async (name: string) => stored.get(name), loadAll: async () => [...stored.values()] };
  const bus = new HandBus();
  new ProviderSync(providers as unknown as ProvidersService, store as unknown as ProviderStore, bus).onModuleInit();
  return { bus, applied, stored };
}

describe('ProviderSync (cluster mode)', () => {
  it('after a bus outage keeps the providers of this replica’s configuration, and drops an admin-made one the store no longer has', async () => {
    const { bus, applied } = replica();
    await Promise.all(bus.resyncs.map((resync) => resync()));
    await settle();
    expect(applied).toEqual([['from-admin', undefined]]);
  });

  it('re-reads the provider a bus message names and applies it as stored', async () => {
    const { bus, applied, stored } = replica();
    stored.set('gpu-a', { name: 'gpu-a' });
    bus.deliver(BUS_TOPICS.provider, { name: 'gpu-a' });
    bus.deliver(BUS_TOPICS.provider, { name: 'gone' });
    await settle();
    expect(applied).toEqual([
      ['gpu-a', 'gpu-a'],
      ['gone', undefined],
    ]);
  });
});
