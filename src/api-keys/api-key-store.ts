import type { Priority } from '../common/priority';

/** A client API key as persisted (and held in memory). Never holds the key itself. */
export interface ApiKeyRecord {
  id: string;
  name: string;
  /** SHA-256 of the key, lower-case hex. */
  keyHash: string;
  /** `sb-` + 8 characters for gateway-issued keys; '' for keys from the config file. */
  prefix: string;
  tenant: string;
  /** false once revoked (`PATCH {enabled: false}`) or disabled in the config file. */
  enabled: boolean;
  source: 'admin' | 'config';
  rpm: number | null;
  tpm: number | null;
  /** How many of its requests may be on workers at once; null or absent = no cap of its own. */
  maxConcurrent?: number | null;
  priority: Priority | null;
  models: string[] | null;
  expiresAt: number | null;
  createdAt: number;
  lastUsedAt: number | null;
  /** When the key was revoked through the admin API; null while enabled. */
  revokedAt: number | null;
}

/** Persistence port for API keys; the TypeORM implementation lives in api-key-store.typeorm.ts. */
export abstract class ApiKeyStore {
  abstract loadAll(): Promise<ApiKeyRecord[]>;
  /** Insert or replace every column but `last_used_at`, which only `recordLastUsed` moves. */
  abstract save(record: ApiKeyRecord): Promise<void>;
  abstract delete(id: string): Promise<void>;
  /** Sets `last_used_at` of many keys at once (one statement); unknown ids are ignored. */
  abstract recordLastUsed(entries: ReadonlyArray<readonly [id: string, at: number]>): Promise<void>;
  /** One key as stored now, by id (cluster mode: another replica changed it). Stores may do better than this scan. */
  async find(id: string): Promise<ApiKeyRecord | undefined> {
    return (await this.loadAll()).find((r) => r.id === id);
  }
  /** One key as stored now, by the SHA-256 of the key (cluster mode: a key this replica has not heard of yet). */
  async findByHash(keyHash: string): Promise<ApiKeyRecord | undefined> {
    return (await this.loadAll()).find((r) => r.keyHash === keyHash);
  }
}
