import { Inject, Injectable, Logger, OnModuleInit, Optional } from '@nestjs/common';
import { APP_CONFIG, AppConfig, ProviderDefaults } from '../config';
import { ConfigReloadService, PreparedChange } from '../config/config-reload.service';
import { hashSecret } from '../common/secret-hash';
import { ProviderRecord, ProviderStore } from './provider-store';
import { compileAllowList, ModelOwnership } from './model-ownership';
import {
  PoolAlias,
  PoolCordon,
  PoolDeclarations,
  Provider,
  ProviderChanges,
  ProviderInput,
  ProviderListener,
  toProvider,
  toRecord,
  WorkerAuthResult,
} from './provider';
import { ADMIN_LIMITS } from './provider-limits';
import { configPatch, indexPoolAliases, recordFromConfig, storedPatch } from './provider-config';
import { BUS_TOPICS, ClusterBus } from '../cluster/cluster-bus.port';
import { WorkerSecrets } from './worker-secrets';

// The provider types lived here first; their importers keep this path.
export { cordonCovers } from './provider';
export type { PoolAlias, PoolCordon, PoolDeclarations, Provider, ProviderChanges, ProviderInput, WorkerAuthResult } from './provider';

/**
 * Providers from configuration (rewritten at every boot) and from the admin API (persisted),
 * held in memory so lookups on the request path never touch the database.
 */
@Injectable()
export class ProvidersService implements OnModuleInit {
  private readonly log = new Logger('Providers');
  private readonly providers = new Map<string, Provider>();
  /** Pool-scoped aliases of every provider, by alias (unique across providers). */
  private aliasIndex = new Map<string, PoolAlias>();
  private readonly deletedListeners: ProviderListener[] = [];
  private readonly changedListeners: ProviderListener[] = [];
  /** Worker secrets: scrypt checks, and the secrets known good for the current hashes. */
  private readonly secrets = new WorkerSecrets();
  /** Limits of providers that set none (admin-created ones); replaced by a configuration reload. */
  private defaults: ProviderDefaults;
  /** Which providers own a model (model-ownership.ts); reset whenever a provider or its `models` changes. */
  private readonly ownership = new ModelOwnership<Provider>(() => this.providers.values());

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly store: ProviderStore,
    @Optional() reload?: ConfigReloadService,
    @Optional() private readonly bus?: ClusterBus,
  ) {
    this.defaults = config.providerDefaults;
    reload?.register({ section: 'providers', order: 2, prepare: (next, problems) => this.prepareReload(next, problems) });
  }

  async onModuleInit(): Promise<void> {
    const stored = await this.store.loadAll();
    const storedByName = new Map(stored.map((r) => [r.name, r]));
    const configured = new Set<string>();
    for (const pc of this.config.providers) {
      configured.add(pc.name);
      const record = await recordFromConfig(pc, storedByName.get(pc.name));
      await this.store.save(record);
      this.providers.set(record.name, toProvider(record));
      this.primeVerified(pc.name, pc.secret, record.secretHash);
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
    this.indexAliases();
    this.ownership.invalidate();
  }

  // ---------------------------------------------------------------- configuration reload

  /**
   * Builds the provider set of a reloaded configuration (secrets hashed) without changing
   * anything. Providers created through the admin API are never touched: a file entry with the
   * name of one is a problem.
   */
  private async prepareReload(next: AppConfig, problems: string[]): Promise<PreparedChange> {
    const records: ProviderRecord[] = [];
    const adminNamed = (name: string) => this.providers.get(name)?.source === 'admin';
    const checkAdmin = (out: string[]) => {
      for (const pc of next.providers) {
        if (adminNamed(pc.name)) {
          out.push(
            `providers: "${pc.name}" is a provider created through the admin API, which a reload never changes; rename the file's entry or delete that provider first`,
          );
        }
      }
    };
    const before = problems.length;
    checkAdmin(problems);
    if (problems.length === before) {
      for (const pc of next.providers) records.push(await recordFromConfig(pc, this.providers.get(pc.name)));
    }
    let changes: ProviderChanges = { added: [], updated: [], removed: [] };
    const warnings = records
      .filter((r) => {
        const current = this.providers.get(r.name);
        return !r.secretHash && (current === undefined || current.secretHash !== null);
      })
      .map((r) => `provider "${r.name}" has no worker secret: no worker can connect to it`);
    return {
      warnings,
      check: checkAdmin,
      commit: () => {
        changes = this.applyConfigured(records, next.providerDefaults);
        for (const pc of next.providers) this.primeVerified(pc.name, pc.secret, this.providers.get(pc.name)?.secretHash ?? null);
        return { ...changes };
      },
      persist: async () => {
        for (const name of changes.removed) await this.store.delete(name);
        for (const name of [...changes.added, ...changes.updated]) {
          const p = this.providers.get(name);
          if (p) await this.store.save(toRecord(p));
        }
      },
    };
  }

  /**
   * Swaps in the configured providers (synchronously): new ones are added, changed ones updated in
   * place as by `update` (a cordon and pool aliases stay), and configured ones no longer in the
   * file removed as by `remove` (their requests fail `provider_deleted`, their workers are closed).
   */
  private applyConfigured(records: ProviderRecord[], defaults: ProviderDefaults): ProviderChanges {
    const changes: ProviderChanges = { added: [], updated: [], removed: [] };
    const wanted = new Set(records.map((r) => r.name));
    for (const p of [...this.providers.values()]) {
      if (p.source === 'config' && !wanted.has(p.name)) {
        this.drop(p);
        changes.removed.push(p.name);
      }
    }
    for (const record of records) {
      const p = this.providers.get(record.name);
      if (!p) {
        this.providers.set(record.name, toProvider(record));
        changes.added.push(record.name);
        continue;
      }
      const patch = configPatch(p, record);
      if (Object.keys(patch).length === 0) continue;
      this.assign(p, patch);
      changes.updated.push(record.name);
    }
    this.defaults = defaults;
    this.indexAliases();
    this.ownership.invalidate();
    return changes;
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

  /**
   * Whether `secret` is known to match this provider's current secret without a scrypt check
   * (synchronous, microseconds): it passed one before, or the gateway was given it in plain text
   * (configuration, admin API). A worker holding it is accepted even while its address is being
   * throttled for failures (docs/security.md, "Connections").
   */
  isVerifiedWorkerSecret(name: string, secret: string | undefined): boolean {
    return this.secrets.isVerified(name, secret, this.providers.get(name)?.secretHash);
  }

  /** A secret the gateway holds in plain text is known good for its hash: no scrypt needed to recognise it. */
  private primeVerified(name: string, secret: string | undefined, hash: string | null): void {
    this.secrets.prime(name, secret, hash);
  }

  verifyWorkerSecret(name: string, secret: string | undefined): Promise<WorkerAuthResult> {
    return this.secrets.verify(name, secret, (n) => this.providers.get(n));
  }

  async create(input: ProviderInput): Promise<Provider> {
    if (this.providers.has(input.name)) throw new Error(`provider "${input.name}" already exists`);
    const record: ProviderRecord = {
      name: input.name,
      secretHash: input.secret ? await hashSecret(input.secret) : null,
      enabled: input.enabled ?? true,
      maxQueueLen: input.maxQueueLen ?? this.defaults.maxQueueLen,
      queueTimeoutMs: input.queueTimeoutMs ?? this.defaults.queueTimeoutMs,
      requestTimeoutMs: input.requestTimeoutMs ?? this.defaults.requestTimeoutMs,
      firstByteTimeoutMs: input.firstByteTimeoutMs ?? null,
      maxModelsPerWorker: input.maxModelsPerWorker ?? this.defaults.maxModelsPerWorker,
      models: input.models ?? [],
      priority: input.priority ?? null,
      capabilities: input.capabilities ?? {},
      translation: input.translation ?? null,
      aliases: {},
      source: 'admin',
    };
    // Another creation (or a configuration reload) may have taken the name while the secret was hashed.
    if (this.providers.has(input.name)) throw new Error(`provider "${input.name}" already exists`);
    await this.store.save(record);
    const provider = toProvider(record);
    this.providers.set(provider.name, provider);
    this.ownership.invalidate();
    this.primeVerified(provider.name, input.secret, record.secretHash);
    this.bus?.publish(BUS_TOPICS.provider, { name: provider.name });
    return provider;
  }

  async update(name: string, patch: Omit<ProviderInput, 'name'>): Promise<Provider | undefined> {
    const p = this.providers.get(name);
    if (!p) return undefined;
    const changes: Partial<ProviderRecord> = {};
    if (patch.secret) changes.secretHash = await hashSecret(patch.secret);
    for (const { key } of ADMIN_LIMITS) {
      const value = patch[key as keyof typeof patch];
      if (value !== undefined) (changes as Record<string, unknown>)[key] = value;
    }
    if (patch.capabilities !== undefined) changes.capabilities = patch.capabilities;
    if (patch.models !== undefined) changes.models = patch.models;
    // Stored first: a failed write must not leave a rotated secret or a disable live in memory only.
    await this.store.save({ ...toRecord(p), ...changes });
    this.assign(p, changes);
    if (changes.secretHash) this.primeVerified(name, patch.secret, changes.secretHash);
    this.bus?.publish(BUS_TOPICS.provider, { name });
    return p;
  }

  async remove(name: string): Promise<boolean> {
    const p = this.providers.get(name);
    if (!p) return false;
    this.drop(p);
    this.indexAliases();
    await this.store.delete(name);
    this.bus?.publish(BUS_TOPICS.provider, { name });
    return true;
  }

  /**
   * Applies a provider as stored now (another replica created, changed, reloaded or deleted it;
   * provider-sync.ts) the way the local change applies: added, updated in place (listeners told,
   * cordon kept), or dropped (its requests fail `provider_deleted`, its workers close).
   */
  applyStored(name: string, record: ProviderRecord | undefined): void {
    const p = this.providers.get(name);
    if (!record) {
      if (p) this.drop(p);
    } else if (!p) {
      this.providers.set(name, toProvider(record));
      this.ownership.invalidate();
    } else {
      const patch = storedPatch(p, record);
      if (Object.keys(patch).length === 0) return;
      this.assign(p, patch);
    }
    this.indexAliases();
  }

  /**
   * `POST /v1/pools/:id/reload`: replaces the pool's declared models, pool aliases and capability
   * declarations at once (the caller validated them), then stores the provider. If storing fails,
   * the previous declarations are restored and the error is thrown. Undefined for an unknown pool.
   */
  async reloadPool(name: string, next: PoolDeclarations): Promise<Provider | undefined> {
    const p = this.providers.get(name);
    if (!p) return undefined;
    const previous: PoolDeclarations = { models: p.models, aliases: p.aliases, capabilities: p.capabilities };
    this.assign(p, { models: [...next.models], aliases: { ...next.aliases }, capabilities: next.capabilities });
    this.indexAliases();
    try {
      await this.store.save(toRecord(p));
    } catch (e) {
      // Only if nothing replaced or removed the provider meanwhile (reloads run one at a time).
      if (this.providers.get(name) === p) {
        this.assign(p, previous);
        this.indexAliases();
      }
      throw e;
    }
    this.bus?.publish(BUS_TOPICS.provider, { name });
    return p;
  }

  /**
   * Providers whose `models` list `model` (exactly or by a glob), from a cache reset on provider
   * changes: the request path does one map lookup. Empty when nobody owns it.
   */
  ownersOf(model: string): ReadonlySet<Provider> {
    return this.ownership.ownersOf(model);
  }

  /** Whether a worker of `provider` may serve `model` (its allow-list and other providers' ownership). */
  mayServe(provider: Provider, model: string): boolean {
    return this.ownership.mayServe(provider, model);
  }

  /** The pool-scoped alias of that name, if a provider has one (request path: one map lookup). */
  poolAlias(alias: string): PoolAlias | undefined {
    return this.aliasIndex.get(alias);
  }

  /** Every pool-scoped alias, for listing. */
  poolAliases(): IterableIterator<[string, PoolAlias]> {
    return this.aliasIndex.entries();
  }

  /** Changes settings in place (requests and plans hold the object) and tells the listeners. */
  private assign(p: Provider, changes: Partial<ProviderRecord>): void {
    if (changes.secretHash !== undefined && changes.secretHash !== p.secretHash) this.secrets.forget(p.name);
    Object.assign(p, changes);
    if (changes.models !== undefined) {
      p.allowList = compileAllowList(changes.models);
      p.declaredModels = p.allowList.exact;
      this.ownership.invalidate();
    }
    for (const l of this.changedListeners) l(p);
  }

  /** Forgets a provider at once: its requests fail `provider_deleted` and its workers close (listeners). */
  private drop(p: Provider): void {
    this.providers.delete(p.name);
    this.ownership.invalidate();
    this.secrets.forget(p.name);
    for (const l of this.deletedListeners) l(p);
  }

  /** Rebuilt whenever aliases or providers change (rare); an alias held by two providers keeps the first. */
  private indexAliases(): void {
    this.aliasIndex = indexPoolAliases(this.providers.values(), (message) => this.log.warn(message));
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
}
