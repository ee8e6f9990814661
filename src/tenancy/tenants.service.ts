import { Inject, Injectable, Logger, OnModuleInit, Optional } from '@nestjs/common';
import { isDeepStrictEqual } from 'node:util';
import { APP_CONFIG, AppConfig } from '../config';
import { ConfigReloadService, PreparedChange } from '../config/config-reload.service';
import { TenancyConfig, TenantSettings } from '../config/sections/tenancy';
import { TenantRecord, TenantStore } from './tenant-store';
import { BUS_TOPICS, ClusterBus } from '../cluster/cluster-bus.port';

/** Where a tenant's effective settings come from, highest precedence first. */
export type TenantSource = 'admin' | 'config' | 'default';

export interface TenantView {
  id: string;
  source: TenantSource;
  settings: TenantSettings;
  /** Only for stored (`admin`) tenants. */
  createdAt?: number;
  updatedAt?: number;
}

type TenantListener = (id: string) => void;

/** What a configuration reload changed among the configured tenants. */
export interface TenantChanges {
  added: string[];
  updated: string[];
  removed: string[];
  /** Changed configured tenants whose settings stored through the admin API still win. */
  overridden: string[];
}

/**
 * Each tenant's settings, in memory for the request path. Precedence: settings stored through the
 * admin API (`PUT /admin/tenants/:id`, table `tenants`) > the configured ones (config file
 * `tenants:`, `TENANT_RATE_LIMIT_<tenant>`) > the defaults (`DEFAULT_RATE_LIMIT`). A stored tenant
 * replaces its configured entry as a whole; it is not merged with it. A configuration reload
 * replaces the configured tenants (and defaults) at once; stored tenants are never touched by it.
 */
@Injectable()
export class TenantsService implements OnModuleInit {
  private readonly log = new Logger('Tenants');
  private configured: Map<string, TenantSettings>;
  private readonly stored = new Map<string, TenantRecord>();
  private defaults: TenantSettings;
  private readonly changedListeners: TenantListener[] = [];

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    @Optional() private readonly store?: TenantStore,
    @Optional() reload?: ConfigReloadService,
    @Optional() private readonly bus?: ClusterBus,
  ) {
    this.configured = new Map(config.tenancy.tenants);
    this.defaults = config.tenancy.defaults;
    reload?.register({ section: 'tenants', order: 3, prepare: (next) => this.prepareReload(next.tenancy) });
  }

  /** The configured tenants of a reloaded configuration, swapped in at commit. */
  private prepareReload(next: TenancyConfig): PreparedChange {
    const tenants = new Map(next.tenants);
    return { commit: () => this.replaceConfigured(tenants, next.defaults) };
  }

  /**
   * Replaces the configured tenants (synchronously); stored tenants keep precedence. The defaults
   * come from DEFAULT_RATE_LIMIT, an environment variable, so a reload finds them unchanged.
   */
  private replaceConfigured(tenants: Map<string, TenantSettings>, defaults: TenantSettings): TenantChanges {
    const changes: TenantChanges = { added: [], updated: [], removed: [], overridden: [] };
    for (const [id, settings] of tenants) {
      if (!this.configured.has(id)) changes.added.push(id);
      else if (!isDeepStrictEqual(this.configured.get(id), settings)) changes.updated.push(id);
    }
    for (const id of this.configured.keys()) if (!tenants.has(id)) changes.removed.push(id);
    const changed = [...changes.added, ...changes.updated, ...changes.removed];
    changes.overridden = changed.filter((id) => this.stored.has(id));
    this.configured = tenants;
    this.defaults = defaults;
    for (const id of changed) if (!this.stored.has(id)) this.changed(id);
    return changes;
  }

  async onModuleInit(): Promise<void> {
    if (!this.store) return;
    for (const record of await this.store.loadAll()) this.stored.set(record.id, record);
    const overridden = [...this.stored.keys()].filter((id) => this.configured.has(id));
    if (overridden.length > 0) {
      this.log.log(`settings stored through the admin API override the configured ones for tenant(s) ${overridden.join(', ')}`);
    }
  }

  /** Synchronous and in memory: called for every request. */
  settingsOf(tenant: string): TenantSettings {
    return this.stored.get(tenant)?.settings ?? this.configured.get(tenant) ?? this.defaults;
  }

  describe(id: string): TenantView {
    const stored = this.stored.get(id);
    if (stored) return { id, source: 'admin', settings: stored.settings, createdAt: stored.createdAt, updatedAt: stored.updatedAt };
    const configured = this.configured.get(id);
    if (configured) return { id, source: 'config', settings: configured };
    return { id, source: 'default', settings: this.defaults };
  }

  /** Tenants with settings of their own (stored or configured), by id. */
  list(): TenantView[] {
    const ids = new Set([...this.configured.keys(), ...this.stored.keys()]);
    return [...ids].sort().map((id) => this.describe(id));
  }

  /** Settings of tenants without their own (`DEFAULT_RATE_LIMIT`). */
  defaultSettings(): TenantSettings {
    return this.defaults;
  }

  /** Stores the tenant's whole settings (write-through) and applies them at once. */
  async put(id: string, settings: TenantSettings): Promise<TenantView> {
    const record = await this.requireStore().save(id, settings);
    this.stored.set(id, { ...record, settings });
    this.changed(id);
    this.bus?.publish(BUS_TOPICS.tenant, { id });
    return this.describe(id);
  }

  /** Forgets the stored settings: the configured ones (or the defaults) apply again. */
  async remove(id: string): Promise<boolean> {
    if (!this.stored.has(id)) return false;
    await this.requireStore().delete(id);
    this.stored.delete(id);
    this.changed(id);
    this.bus?.publish(BUS_TOPICS.tenant, { id });
    return true;
  }

  /**
   * Applies a tenant as stored now (another replica changed it, tenant-sync.ts): its settings, or
   * the configured ones again when the row is gone; the listeners are told as for a local change.
   */
  applyStored(id: string, record: TenantRecord | undefined): void {
    const before = this.stored.get(id);
    if (record) this.stored.set(id, record);
    else if (before) this.stored.delete(id);
    else return;
    if (!isDeepStrictEqual(before?.settings, record?.settings)) this.changed(id);
  }

  /** Ids of the tenants stored through the admin API that this replica holds. */
  storedIds(): string[] {
    return [...this.stored.keys()];
  }

  /** Called (synchronously) after a tenant's settings were stored or removed through the API. */
  onChanged(listener: TenantListener): void {
    this.changedListeners.push(listener);
  }

  private changed(id: string): void {
    for (const l of this.changedListeners) l(id);
  }

  private requireStore(): TenantStore {
    if (!this.store) throw new Error('tenant settings cannot be stored: no TenantStore');
    return this.store;
  }
}
