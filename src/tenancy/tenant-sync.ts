import { Injectable, Logger, OnModuleInit, Optional } from '@nestjs/common';
import { BUS_TOPICS, ClusterBus } from '../cluster/cluster-bus.port';
import { TenantStore } from './tenant-store';
import { TenantsService } from './tenants.service';

/**
 * Cluster mode: a tenant stored or removed on another replica arrives as `{id}` on the bus and is
 * re-read from the store; after a bus outage every stored tenant is re-read. One process: nothing.
 */
@Injectable()
export class TenantSync implements OnModuleInit {
  private readonly log = new Logger('Tenants');
  /** Re-reads run one after another, so a later change is never overwritten by an earlier read. */
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly tenants: TenantsService,
    @Optional() private readonly store?: TenantStore,
    @Optional() private readonly bus?: ClusterBus,
  ) {}

  onModuleInit(): void {
    if (!this.bus?.enabled || !this.store) return;
    this.bus.subscribe(BUS_TOPICS.tenant, (data) => {
      const id = (data as { id?: unknown } | null)?.id;
      if (typeof id === 'string') void this.refresh(id);
    });
    this.bus.onResync(() => this.resync());
  }

  refresh(id: string): Promise<void> {
    return this.serial(async (store) => this.tenants.applyStored(id, await store.find(id)));
  }

  resync(): Promise<void> {
    return this.serial(async (store) => {
      const stored = await store.loadAll();
      const ids = new Set(stored.map((r) => r.id));
      for (const r of stored) this.tenants.applyStored(r.id, r);
      for (const id of this.tenants.storedIds()) if (!ids.has(id)) this.tenants.applyStored(id, undefined);
    });
  }

  private serial(work: (store: TenantStore) => Promise<void>): Promise<void> {
    const store = this.store;
    if (!store) return Promise.resolve();
    this.chain = this.chain.then(() => work(store)).catch((e: unknown) => this.log.warn(`re-reading tenants failed: ${(e as Error).message}`));
    return this.chain;
  }
}
