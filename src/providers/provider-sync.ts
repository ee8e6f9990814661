import { Injectable, Logger, OnModuleInit, Optional } from '@nestjs/common';
import { BUS_TOPICS, ClusterBus } from '../cluster/cluster-bus.port';
import { ProviderStore } from './provider-store';
import { ProvidersService } from './providers.service';

/**
 * Cluster mode: a provider created, changed (PATCH, pool reload), disabled or deleted on another
 * replica arrives as `{name}` on the bus and is re-read from the store, then applied as the local
 * change applies (ProvidersService.applyStored: its listeners fail a deleted provider's requests
 * and close its workers, offer a changed one's idle workers). After a bus outage every provider is
 * re-read. One process: nothing.
 */
@Injectable()
export class ProviderSync implements OnModuleInit {
  private readonly log = new Logger('Providers');
  /** Re-reads run one after another, so a later change is never overwritten by an earlier read. */
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly providers: ProvidersService,
    private readonly store: ProviderStore,
    @Optional() private readonly bus?: ClusterBus,
  ) {}

  onModuleInit(): void {
    if (!this.bus?.enabled) return;
    this.bus.subscribe(BUS_TOPICS.provider, (data) => {
      const name = (data as { name?: unknown } | null)?.name;
      if (typeof name === 'string') void this.refresh(name);
    });
    this.bus.onResync(() => this.resync());
  }

  refresh(name: string): Promise<void> {
    return this.serial(async () => this.providers.applyStored(name, await this.store.find(name)));
  }

  /**
   * Every provider re-read. A configured provider missing from the store is kept: each replica
   * writes its own configuration's providers, and only an explicit delete message removes one.
   */
  resync(): Promise<void> {
    return this.serial(async () => {
      const stored = await this.store.loadAll();
      const names = new Set(stored.map((r) => r.name));
      for (const r of stored) this.providers.applyStored(r.name, r);
      for (const p of this.providers.list()) if (!names.has(p.name) && p.source === 'admin') this.providers.applyStored(p.name, undefined);
    });
  }

  private serial(work: () => Promise<void>): Promise<void> {
    this.chain = this.chain.then(work).catch((e: unknown) => this.log.warn(`re-reading providers failed: ${(e as Error).message}`));
    return this.chain;
  }
}
