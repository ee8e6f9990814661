import type { ModelCapabilities } from '../protocol';

/** A provider as persisted. Secrets are only ever stored as scrypt hashes. */
export interface ProviderRecord {
  name: string;
  secretHash: string | null;
  enabled: boolean;
  maxQueueLen: number;
  queueTimeoutMs: number;
  requestTimeoutMs: number;
  /** The pool's own first-byte watchdog timeout; null/absent = `routing.first_byte_timeout_secs`. */
  firstByteTimeoutMs?: number | null;
  maxModelsPerWorker: number;
  models: string[];
  /** Routing priority of the provider's workers (lower is preferred); null = the workers' own. */
  priority: number | null;
  /** Per-model capability declarations that override what workers advertise. */
  capabilities: Record<string, ModelCapabilities>;
  /**
   * Pool-scoped aliases, alias → a model of this pool (`POST /v1/pools/:id/reload`): a request for
   * the alias is served by this pool's workers with the target model. Set only through that route,
   * for configured and admin-created providers alike (the config file has no such key).
   */
  aliases: Record<string, string>;
  /** GPU-time chargeback: the price of one GPU for an hour (any currency); null/absent = unpriced. */
  costPerGpuHour?: number | null;
  /** GPUs behind each of the pool's workers (default 1); a slot is a `1 / max_concurrent` share of them. */
  gpusPerWorker?: number | null;
  /** Whether requests may reach its workers by translation (`auto`/`never`); null/absent = `routing.translation`. */
  translation?: 'auto' | 'never' | null;
  /** `config` rows are rewritten from env/YAML at every boot; `admin` rows are created through the API. */
  source: 'config' | 'admin';
}

/** Persistence port for providers; the TypeORM implementation lives in provider-store.typeorm.ts. */
export abstract class ProviderStore {
  abstract loadAll(): Promise<ProviderRecord[]>;
  abstract save(record: ProviderRecord): Promise<void>;
  abstract delete(name: string): Promise<void>;
  /** One provider as stored now (cluster mode: another replica changed it). Stores may do better than this scan. */
  async find(name: string): Promise<ProviderRecord | undefined> {
    return (await this.loadAll()).find((r) => r.name === name);
  }
}
