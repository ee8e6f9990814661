import type { TenantSettings } from '../config/sections/tenancy';

/** A tenant's settings as stored through the admin API. */
export interface TenantRecord {
  id: string;
  settings: TenantSettings;
  createdAt: number;
  updatedAt: number;
}

/** Persistence port for tenants; the TypeORM implementation lives in tenant-store.typeorm.ts. */
export abstract class TenantStore {
  abstract loadAll(): Promise<TenantRecord[]>;
  /** Insert or replace the tenant's settings; returns the record as stored (created_at kept). */
  abstract save(id: string, settings: TenantSettings): Promise<TenantRecord>;
  abstract delete(id: string): Promise<void>;
  /** One tenant as stored now (cluster mode: another replica changed it). Stores may do better than this scan. */
  async find(id: string): Promise<TenantRecord | undefined> {
    return (await this.loadAll()).find((r) => r.id === id);
  }
}
