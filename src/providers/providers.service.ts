import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { APP_CONFIG, AppConfig, ProviderConfig } from '../config';
import { hashSecret, verifySecret } from '../auth/secret-hash';
import { VerifiedSecretCache } from '../auth/verified-secret-cache';
import { ProviderRecord, ProviderStore } from './provider-store';
import type { ModelCapabilities } from '../protocol';

/** A virtual provider as the relay uses it: the stored record plus a fast model-membership set. */
export type Provider = ProviderRecord & {
  /** `models` as a set, for lookups on the request path. */
  declaredModels: Set<string>;
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
  maxModelsPerWorker?: number;
  models?: string[];
  /** null clears a priority set earlier. */
  priority?: number | null;
  capabilities?: Record<string, ModelCapabilities>;
}

type ProviderListener = (provider: Provider) => void;

/**
 * Providers from configuration (rewritten at every boot) and from the admin API (persisted),
 * held in memory so lookups on the request path never touch the database.
 */
@Injectable()
export class ProvidersService implements OnModuleInit {
  private readonly log = new Logger('Providers');
  private readonly providers = new Map<string, Provider>();
  private readonly deletedListeners: ProviderListener[] = [];
  private readonly changedListeners: ProviderListener[] = [];
  private readonly verified = new VerifiedSecretCache();
  /** Compared against when the provider is unknown, so timing does not reveal provider names. */
  private dummyHash: Promise<string> | undefined;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly store: ProviderStore,
  ) {}

  async onModuleInit(): Promise<void> {
    const stored = await this.store.loadAll();
    const storedByName = new Map(stored.map((r) => [r.name, r]));
    const configured = new Set<string>();
    for (const pc of this.config.providers) {
      configured.add(pc.name);
      const record = await this.recordFromConfig(pc, storedByName.get(pc.name));
      await this.store.save(record);
      this.providers.set(record.name, toProvider(record));
      if (!record.secretHash) {
        this.log.warn(`provider "${pc.name}" has no worker secret: no worker can connect to it (set WORKER_SECRET)`);
      }
    }
    for (const record of stored) {
      if (configured.has(record.name)) continue;
      if (record.source === 'config') {
        await this.store.delete(record.name); // removed from configuration since the last boot
        continue;
      }
      this.providers.set(record.name, toProvider(record));
    }
  }

  private async recordFromConfig(pc: ProviderConfig, previous: ProviderRecord | undefined): Promise<ProviderRecord> {
    let secretHash = pc.secretHash ?? null;
    if (pc.secret) {
      // Re-use the stored hash when it still matches, so restarts do not churn salts.
      const reuse = previous?.secretHash && (await verifySecret(pc.secret, previous.secretHash));
      secretHash = reuse ? previous!.secretHash : await hashSecret(pc.secret);
    }
    return {
      name: pc.name,
      secretHash,
      enabled: pc.enabled,
      maxQueueLen: pc.maxQueueLen,
      queueTimeoutMs: pc.queueTimeoutMs,
      requestTimeoutMs: pc.requestTimeoutMs,
      maxModelsPerWorker: pc.maxModelsPerWorker,
      models: pc.models,
      priority: pc.priority ?? null,
      capabilities: pc.capabilities,
      source: 'config',
    };
  }

  get(name: string): Provider | undefined {
    return this.providers.get(name);
  }

  list(): Provider[] {
    return [...this.all()];
  }

  /** The providers without copying them, for the request path. */
  all(): IterableIterator<Provider> {
    return this.providers.values();
  }

  async verifyWorkerSecret(name: string, secret: string | undefined): Promise<WorkerAuthResult> {
    const provider = this.providers.get(name);
    if (!provider || !provider.secretHash) {
      await verifySecret(secret ?? '', await (this.dummyHash ??= hashSecret('switchboard-dummy')));
      return provider ? 'bad_secret' : 'unknown_provider';
    }
    if (!secret) return 'no_secret';
    const hash = provider.secretHash;
    if (!this.verified.matches(name, secret, hash)) {
      if (!(await verifySecret(secret, hash))) return 'bad_secret';
      this.verified.remember(name, secret, hash);
    }
    const current = this.providers.get(name);
    // The secret changed while it was being checked: it matched the old one.
    if (current?.secretHash !== hash) return 'bad_secret';
    // Checked after the secret so a disabled provider answers exactly like a wrong secret.
    return current.enabled ? 'ok' : 'disabled';
  }

  async create(input: ProviderInput): Promise<Provider> {
    if (this.providers.has(input.name)) throw new Error(`provider "${input.name}" already exists`);
    const record: ProviderRecord = {
      name: input.name,
      secretHash: input.secret ? await hashSecret(input.secret) : null,
      enabled: input.enabled ?? true,
      maxQueueLen: input.maxQueueLen ?? this.defaults().maxQueueLen,
      queueTimeoutMs: input.queueTimeoutMs ?? this.defaults().queueTimeoutMs,
      requestTimeoutMs: input.requestTimeoutMs ?? this.defaults().requestTimeoutMs,
      maxModelsPerWorker: input.maxModelsPerWorker ?? this.defaults().maxModelsPerWorker,
      models: input.models ?? [],
      priority: input.priority ?? null,
      capabilities: input.capabilities ?? {},
      source: 'admin',
    };
    await this.store.save(record);
    const provider = toProvider(record);
    this.providers.set(provider.name, provider);
    return provider;
  }

  async update(name: string, patch: Omit<ProviderInput, 'name'>): Promise<Provider | undefined> {
    const p = this.providers.get(name);
    if (!p) return undefined;
    if (patch.secret) {
      p.secretHash = await hashSecret(patch.secret);
      this.verified.forget(name);
    }
    if (patch.enabled !== undefined) p.enabled = patch.enabled;
    if (patch.maxQueueLen !== undefined) p.maxQueueLen = patch.maxQueueLen;
    if (patch.queueTimeoutMs !== undefined) p.queueTimeoutMs = patch.queueTimeoutMs;
    if (patch.requestTimeoutMs !== undefined) p.requestTimeoutMs = patch.requestTimeoutMs;
    if (patch.maxModelsPerWorker !== undefined) p.maxModelsPerWorker = patch.maxModelsPerWorker;
    if (patch.priority !== undefined) p.priority = patch.priority;
    if (patch.capabilities !== undefined) p.capabilities = patch.capabilities;
    if (patch.models !== undefined) {
      p.models = patch.models;
      p.declaredModels = new Set(patch.models);
    }
    for (const l of this.changedListeners) l(p);
    await this.store.save(toRecord(p));
    return p;
  }

  async remove(name: string): Promise<boolean> {
    const p = this.providers.get(name);
    if (!p) return false;
    this.providers.delete(name);
    this.verified.forget(name);
    for (const l of this.deletedListeners) l(p);
    await this.store.delete(name);
    return true;
  }

  /** Cordons a pool (kept across updates, dropped with the provider); false when it is unknown. */
  cordon(name: string, cordon: PoolCordon): boolean {
    const p = this.providers.get(name);
    if (!p) return false;
    p.cordon = cordon;
    return true;
  }

  /** Lifts a pool's cordon; false when the provider is unknown (lifting an absent cordon is fine). */
  uncordon(name: string): boolean {
    const p = this.providers.get(name);
    if (!p) return false;
    p.cordon = undefined;
    return true;
  }

  onDeleted(listener: ProviderListener): void {
    this.deletedListeners.push(listener);
  }

  /** Called (synchronously) after a provider's settings changed through `update`. */
  onChanged(listener: ProviderListener): void {
    this.changedListeners.push(listener);
  }

  private defaults() {
    return this.config.providerDefaults;
  }
}

function toProvider(record: ProviderRecord): Provider {
  return { ...record, declaredModels: new Set(record.models) };
}

function toRecord({ declaredModels: _derived, cordon: _memoryOnly, ...record }: Provider): ProviderRecord {
  return record;
}
