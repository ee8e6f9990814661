import { Injectable, Logger, OnModuleInit, Optional } from '@nestjs/common';
import { BusSync } from '../cluster/bus-sync';
import { BUS_TOPICS, ClusterBus } from '../cluster/cluster-bus.port';
import { TenantStore } from './tenant-store';
import { TenantsService } from './tenants.service';

/**
 * Cluster mode: a tenant stored or removed on another replica arrives as `{id}` on the bus and is
 * re-read from the store; after a bus outage every stored tenant is re-read (BusSync). One process,
 * or no tenant store: nothing.
 */
@Injectable()
export class TenantSync implements OnModuleInit {
  constructor(
    private readonly tenants: TenantsService,
    @Optional() private readonly store?: TenantStore,
    @Optional() private readonly bus?: ClusterBus,
  ) {}

  onModuleInit(): void {
    const { store, tenants } = this;
    if (!this.bus?.enabled || !store) return;
    const source = { topic: BUS_TOPICS.tenant, key: 'id', what: 'tenants', store, target: tenants, held: () => tenants.storedIds() } as const;
    new BusSync(source, new Logger('Tenants')).listen(this.bus);
  }
}
