import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config';
import { TenantSettings } from './tenancy-config';

/**
 * Each tenant's settings, in memory for the request path: the configured ones (config file,
 * `TENANT_RATE_LIMIT_<tenant>`), else the defaults (`DEFAULT_RATE_LIMIT`).
 */
@Injectable()
export class TenantsService {
  private readonly tenants: Map<string, TenantSettings>;
  private readonly defaults: TenantSettings;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.tenants = new Map(config.tenancy.tenants);
    this.defaults = config.tenancy.defaults;
  }

  settingsOf(tenant: string): TenantSettings {
    return this.tenants.get(tenant) ?? this.defaults;
  }
}
