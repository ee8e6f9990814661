import { Injectable, Logger, OnModuleInit, Optional } from '@nestjs/common';
import { BusSync } from '../cluster/bus-sync';
import { BUS_TOPICS, ClusterBus } from '../cluster/cluster-bus.port';
import { ProviderStore } from './provider-store';
import { ProvidersService } from './providers.service';

/**
 * Cluster mode: a provider created, changed (PATCH, pool reload), disabled or deleted on another
 * replica arrives as `{name}` on the bus and is re-read from the store, then applied as the local
 * change applies (ProvidersService.applyStored: its listeners fail a deleted provider's requests
 * and close its workers, offer a changed one's idle workers). After a bus outage every provider is
 * re-read (BusSync). One process: nothing.
 */
@Injectable()
export class ProviderSync implements OnModuleInit {
  constructor(
    private readonly providers: ProvidersService,
    private readonly store: ProviderStore,
    @Optional() private readonly bus?: ClusterBus,
  ) {}

  onModuleInit(): void {
    const { store, providers } = this;
    if (!this.bus?.enabled) return;
    // A configured provider missing from the store is kept at a resync: each replica writes its own
    // configuration's providers, and only an explicit delete message removes one.
    const held = () => providers.list().flatMap((p) => (p.source === 'admin' ? [p.name] : []));
    const source = { topic: BUS_TOPICS.provider, key: 'name', what: 'providers', store, target: providers, held } as const;
    new BusSync(source, new Logger('Providers')).listen(this.bus);
  }
}
