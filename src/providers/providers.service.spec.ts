import * as secretHash from '../common/secret-hash';
import type { AppConfig, ProviderConfig } from '../config';
import type { ConfigReloadService, PreparedChange } from '../config/config-reload.service';
import { ProviderRecord, ProviderStore } from './provider-store';
import { ProvidersService } from './providers.service';

class MemoryProviderStore extends ProviderStore {
  readonly records = new Map<string, ProviderRecord>();
  async loadAll(): Promise<ProviderRecord[]> {
    return [...this.records.values()];
  }
  async save(record: ProviderRecord): Promise<void> {
    this.records.set(record.name, { ...record });
  }
  async delete(name: string): Promise<void> {
    this.records.delete(name);
  }
}

const limits = { maxQueueLen: 10, queueTimeoutMs: 1000, requestTimeoutMs: 1000, maxModelsPerWorker: 8 };

async function service(extra: ProviderConfig[] = []): Promise<ProvidersService> {
  const local: ProviderConfig = { name: 'local', secret: 'first-secret', enabled: true, models: [], capabilities: {}, ...limits };
  const config = { providers: [local, ...extra], providerDefaults: limits } as unknown as AppConfig;
  const providers = new ProvidersService(config, new MemoryProviderStore());
  await providers.onModuleInit();
  return providers;
}

describe('ProvidersService worker-secret verification', () => {
  let scrypt: jest.SpyInstance;
  beforeEach(() => {
    scrypt = jest.spyOn(secretHash, 'verifySecret');
  });
  afterEach(() => scrypt.mockRestore());

  it('runs scrypt once for a secret known only by its hash, then answers repeats from memory', async () => {
    const hashed: ProviderConfig = {
      name: 'hashed',
      secretHash: await secretHash.hashSecret('hashed-secret'),
      enabled: true,
      models: [],
      capabilities: {},
      ...limits,
    };
    const providers = await service([hashed]);
    scrypt.mockClear();
    expect(providers.isVerifiedWorkerSecret('hashed', 'hashed-secret')).toBe(false);
    expect(await providers.verifyWorkerSecret('hashed', 'hashed-secret')).toBe('ok');
    expect(scrypt).toHaveBeenCalledTimes(1);
    for (let i = 0; i < 5; i++) expect(await providers.verifyWorkerSecret('hashed', 'hashed-secret')).toBe('ok');
    expect(scrypt).toHaveBeenCalledTimes(1);
    expect(providers.isVerifiedWorkerSecret('hashed', 'hashed-secret')).toBe(true);
  });

  it('knows a secret it was given in plain text (configuration, admin API) without any scrypt', async () => {
    const providers = await service();
    scrypt.mockClear();
    expect(providers.isVerifiedWorkerSecret('local', 'first-secret')).toBe(true);
    expect(providers.isVerifiedWorkerSecret('local', 'first-secreT')).toBe(false);
    expect(providers.isVerifiedWorkerSecret('local', undefined)).toBe(false);
    expect(providers.isVerifiedWorkerSecret('nobody', 'first-secret')).toBe(false);
    expect(await providers.verifyWorkerSecret('local', 'first-secret')).toBe('ok');
    await providers.create({ name: 'created', secret: 'created-secret' });
    expect(providers.isVerifiedWorkerSecret('created', 'created-secret')).toBe(true);
    expect(scrypt).toHaveBeenCalledTimes(0);
  });

  it('never accepts a wrong secret from memory, and checks every wrong one with scrypt', async () => {
    const providers = await service();
    await providers.verifyWorkerSecret('local', 'first-secret');
    scrypt.mockClear();
    expect(await providers.verifyWorkerSecret('local', 'first-secreT')).toBe('bad_secret');
    expect(await providers.verifyWorkerSecret('local', 'first-secreT')).toBe('bad_secret');
    expect(scrypt).toHaveBeenCalledTimes(2);
  });

  it('forgets remembered secrets when the provider secret changes', async () => {
    const providers = await service();
    await providers.verifyWorkerSecret('local', 'first-secret');
    await providers.update('local', { secret: 'second-secret' });
    scrypt.mockClear();
    expect(providers.isVerifiedWorkerSecret('local', 'first-secret')).toBe(false);
    expect(await providers.verifyWorkerSecret('local', 'first-secret')).toBe('bad_secret');
    expect(scrypt).toHaveBeenCalledTimes(1);
    // The new secret was given in plain text: known without scrypt.
    expect(await providers.verifyWorkerSecret('local', 'second-secret')).toBe('ok');
    expect(await providers.verifyWorkerSecret('local', 'second-secret')).toBe('ok');
    expect(scrypt).toHaveBeenCalledTimes(1);
  });

  it('forgets remembered secrets when the provider is deleted, also if it is recreated with the same secret', async () => {
    const providers = await service();
    await providers.verifyWorkerSecret('local', 'first-secret');
    await providers.remove('local');
    expect(await providers.verifyWorkerSecret('local', 'first-secret')).toBe('unknown_provider');
    expect(providers.isVerifiedWorkerSecret('local', 'first-secret')).toBe(false);
    await providers.create({ name: 'local', secret: 'first-secret' });
    scrypt.mockClear();
    expect(await providers.verifyWorkerSecret('local', 'first-secret')).toBe('ok');
    expect(scrypt).toHaveBeenCalledTimes(0); // recreated with the secret in plain text
  });

  it('still answers a disabled provider like a wrong secret for a remembered secret', async () => {
    const providers = await service();
    await providers.verifyWorkerSecret('local', 'first-secret');
    await providers.update('local', { enabled: false });
    expect(await providers.verifyWorkerSecret('local', 'first-secret')).toBe('disabled');
  });
});

describe('ProvidersService hardening', () => {
  it('costs a known provider without a presented secret the same scrypt as an unknown provider (no timing oracle for names)', async () => {
    const providers = await service();
    const scrypt = jest.spyOn(secretHash, 'verifySecret');
    try {
      expect(await providers.verifyWorkerSecret('local', undefined)).toBe('no_secret');
      expect(await providers.verifyWorkerSecret('nosuch', undefined)).toBe('unknown_provider');
      expect(scrypt).toHaveBeenCalledTimes(2);
    } finally {
      scrypt.mockRestore();
    }
  });

  it('leaves a provider unchanged when storing an update fails (no rotated secret or disable live in memory only)', async () => {
    const store = new MemoryProviderStore();
    const local: ProviderConfig = { name: 'local', secret: 'first-secret', enabled: true, models: [], capabilities: {}, ...limits };
    const providers = new ProvidersService({ providers: [local], providerDefaults: limits } as unknown as AppConfig, store);
    await providers.onModuleInit();
    jest.spyOn(store, 'save').mockRejectedValueOnce(new Error('database is locked'));
    await expect(providers.update('local', { secret: 'second-secret', enabled: false })).rejects.toThrow('database is locked');
    expect(providers.get('local')?.enabled).toBe(true);
    expect(await providers.verifyWorkerSecret('local', 'first-secret')).toBe('ok');
  });
});

describe("ProvidersService: a pool's own first-byte timeout", () => {
  it('is stored from the file, follows a reload in place (set, changed, unset) and an admin patch (null clears)', async () => {
    const store = new MemoryProviderStore();
    let prepare: ((next: AppConfig, problems: string[]) => Promise<PreparedChange> | PreparedChange) | undefined;
    const reload = { register: (r: { prepare: typeof prepare }) => (prepare = r.prepare) } as unknown as ConfigReloadService;
    const local = (firstByteTimeoutMs?: number): ProviderConfig => ({
      name: 'local',
      enabled: true,
      models: [],
      capabilities: {},
      ...limits,
      firstByteTimeoutMs,
    });
    const providers = new ProvidersService({ providers: [local(300_000)], providerDefaults: limits } as unknown as AppConfig, store, reload);
    await providers.onModuleInit();
    const pool = providers.get('local')!;
    expect(pool.firstByteTimeoutMs).toBe(300_000);
    expect(store.records.get('local')?.firstByteTimeoutMs).toBe(300_000);
    const apply = async (firstByteTimeoutMs?: number) => {
      const change = await prepare!({ providers: [local(firstByteTimeoutMs)], providerDefaults: limits } as unknown as AppConfig, []);
      change.commit();
      await change.persist?.();
    };
    await apply(45_000);
    expect(providers.get('local')).toBe(pool); // updated in place: requests hold this object
    expect(pool.firstByteTimeoutMs).toBe(45_000);
    expect(store.records.get('local')?.firstByteTimeoutMs).toBe(45_000);
    await apply(undefined);
    expect(pool.firstByteTimeoutMs).toBeNull();

    const created = await providers.create({ name: 'admin-pool', firstByteTimeoutMs: 90_000 });
    expect(created.firstByteTimeoutMs).toBe(90_000);
    expect((await providers.update('admin-pool', { firstByteTimeoutMs: null }))?.firstByteTimeoutMs).toBeNull();
    expect(store.records.get('admin-pool')?.firstByteTimeoutMs).toBeNull();
    expect((await providers.create({ name: 'plain' })).firstByteTimeoutMs).toBeNull();
  });
});

describe('ProvidersService.applyStored (a change made on another replica)', () => {
  const stored = (name: string, fields: Partial<ProviderRecord> = {}): ProviderRecord => ({
    name,
    secretHash: null,
    enabled: true,
    models: [],
    capabilities: {},
    priority: null,
    aliases: {},
    source: 'admin',
    ...limits,
    ...fields,
  });

  it('adds, updates in place (listeners told, cordon kept) and drops (listeners told) as the local changes do', async () => {
    const providers = await service();
    const changed: string[] = [];
    const deleted: string[] = [];
    providers.onChanged((p) => changed.push(p.name));
    providers.onDeleted((p) => deleted.push(p.name));

    providers.applyStored('remote', stored('remote', { models: ['m-*'] }));
    const p = providers.get('remote')!;
    expect(p).toBeDefined();
    expect([...providers.ownersOf('m-1')].map((o) => o.name)).toEqual(['remote']);

    providers.cordon('remote', { since: 1, reason: 'r', deadlineMs: 1, models: new Set() });
    providers.applyStored('remote', stored('remote', { models: ['m-*'], enabled: false, aliases: { fast: 'm-1' } }));
    expect(providers.get('remote')).toBe(p); // the same object: requests and plans hold it
    expect(p.enabled).toBe(false);
    expect(p.cordon).toBeDefined();
    expect(providers.poolAlias('fast')?.provider).toBe(p);
    expect(changed).toEqual(['remote']);

    providers.applyStored('remote', stored('remote', { models: ['m-*'], enabled: false, aliases: { fast: 'm-1' } }));
    expect(changed).toEqual(['remote']); // nothing differs: nobody is told

    providers.applyStored('remote', undefined);
    expect(providers.get('remote')).toBeUndefined();
    expect(providers.poolAlias('fast')).toBeUndefined();
    expect(deleted).toEqual(['remote']);
    providers.applyStored('absent', undefined);
    expect(deleted).toEqual(['remote']);
  });
});
