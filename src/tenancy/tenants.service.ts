import { Inject, Injectable, Logger, OnModuleInit, Optional } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config';
import { TenantSettings } from './tenancy-config';
import { TenantRecord, TenantStore } from './tenant-store';

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

/**
 * Each tenant's settings, in memory for the request path. Precedence: settings stored through the
 * admin API (`PUT /admin/tenants/:id`, table `tenants`) > the configured ones (config file
 * `tenants:`, `TENANT_RATE_LIMIT_<tenant>`) > the defaults (`DEFAULT_RATE_LIMIT`). A stored tenant
 * replaces its configured entry as a whole; it is not merged with it.
 */
@Injectable()
export class TenantsService implements OnModuleInit {
  private readonly log = new Logger('Tenants');
  private readonly configured: Map<string, TenantSettings>;
  private readonly stored = new Map<string, TenantRecord>();
  private readonly defaults: TenantSettings;
  private readonly changedListeners: TenantListener[] = [];

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    @Optional() private readonly store?: TenantStore,
  ) {
    this.configured = new Map(config.tenancy.tenants);
    this.defaults = config.tenancy.defaults;
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
    return this.describe(id);
  }

  /** Forgets the stored settings: the configured ones (or the defaults) apply again. */
  async remove(id: string): Promise<boolean> {
    if (!this.stored.has(id)) return false;
    await this.requireStore().delete(id);
    this.stored.delete(id);
    this.changed(id);
    return true;
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
