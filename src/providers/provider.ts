import type { ModelCapabilities } from '../protocol';
import { AllowList, compileAllowList } from './model-ownership';
import { ProviderRecord } from './provider-store';

/** A virtual provider as the relay uses it: the stored record plus a fast model-membership set. */
export type Provider = ProviderRecord & {
  /** The exact names of `models` (not its globs): requests for them may wait while no worker has them. */
  declaredModels: ReadonlySet<string>;
  /** `models` (exact names and `*` globs) compiled: the models this provider's workers may serve. */
  allowList: AllowList;
  /** Set while an operator has the pool drained (`POST /v1/pools/:id/drain` until undrain); memory only. */
  cordon?: PoolCordon;
};

/**
 * A cordoned pool: its workers drain and new ones are refused (close 1013), so it serves nothing
 * until undrain. Kept in memory only: a gateway restart lifts it (see docs/control-plane.md).
 */
export interface PoolCordon {
  /** When the first drain of this cordon was asked (epoch ms). */
  since: number;
  reason: string;
  /** The drain deadline given to the pool's workers. */
  deadlineMs: number;
  /**
   * Models the pool's workers advertised when it was cordoned (`*` included): requests for them
   * answer `pool_unavailable`, not `model_not_found`, however long the cordon lasts.
   */
  models: ReadonlySet<string>;
}

/** Whether a cordoned pool served `model` when it was cordoned. */
export function cordonCovers(cordon: PoolCordon, model: string): boolean {
  return cordon.models.has(model) || cordon.models.has('*');
}

export type WorkerAuthResult = 'ok' | 'unknown_provider' | 'disabled' | 'bad_secret' | 'no_secret';

export interface ProviderInput {
  name: string;
  secret?: string;
  enabled?: boolean;
  maxQueueLen?: number;
  queueTimeoutMs?: number;
  requestTimeoutMs?: number;
  /** null clears the pool's own first-byte timeout (back to `routing.first_byte_timeout_secs`). */
  firstByteTimeoutMs?: number | null;
  maxModelsPerWorker?: number;
  models?: string[];
  /** null clears a priority set earlier. */
  priority?: number | null;
  capabilities?: Record<string, ModelCapabilities>;
  /** null clears the pool's own setting (back to `routing.translation`). */
  translation?: 'auto' | 'never' | null;
}

export type ProviderListener = (provider: Provider) => void;

/** What `POST /v1/pools/:id/reload` replaces as a whole. */
export interface PoolDeclarations {
  models: string[];
  aliases: Record<string, string>;
  capabilities: Record<string, ModelCapabilities>;
}

/** A pool-scoped alias: requests for it go to this provider's workers, with the target model. */
export interface PoolAlias {
  provider: Provider;
  target: string;
}

/** Providers a configuration reload added, updated and removed (config-sourced ones only). */
export interface ProviderChanges {
  added: string[];
  updated: string[];
  removed: string[];
}

/** The in-memory provider of a stored record (its `models` compiled). */
export function toProvider(record: ProviderRecord): Provider {
  const allowList = compileAllowList(record.models);
  return { ...record, aliases: record.aliases ?? {}, declaredModels: allowList.exact, allowList };
}

/** The record to store: the provider without what is derived or memory-only. */
export function toRecord({ declaredModels: _derived, allowList: _compiled, cordon: _memoryOnly, ...record }: Provider): ProviderRecord {
  return record;
}
