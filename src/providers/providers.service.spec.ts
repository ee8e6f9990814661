import * as secretHash from '../auth/secret-hash';
import type { AppConfig, ProviderConfig } from '../config';
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

async function service(): Promise<ProvidersService> {
  const local: ProviderConfig = { name: 'local', secret: 'first-secret', enabled: true, models: [], capabilities: {}, ...limits };
  const config = { providers: [local], providerDefaults: limits } as unknown as AppConfig;
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

  it('runs scrypt once for a secret, then answers repeats from memory', async () => {
    const providers = await service();
    scrypt.mockClear();
    expect(await providers.verifyWorkerSecret('local', 'first-secret')).toBe('ok');
    expect(scrypt).toHaveBeenCalledTimes(1);
    for (let i = 0; i < 5; i++) expect(await providers.verifyWorkerSecret('local', 'first-secret')).toBe('ok');
    expect(scrypt).toHaveBeenCalledTimes(1);
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
    expect(await providers.verifyWorkerSecret('local', 'first-secret')).toBe('bad_secret');
    expect(scrypt).toHaveBeenCalledTimes(1);
    expect(await providers.verifyWorkerSecret('local', 'second-secret')).toBe('ok');
    expect(await providers.verifyWorkerSecret('local', 'second-secret')).toBe('ok');
    expect(scrypt).toHaveBeenCalledTimes(2);
  });

  it('forgets remembered secrets when the provider is deleted, also if it is recreated with the same secret', async () => {
    const providers = await service();
    await providers.verifyWorkerSecret('local', 'first-secret');
    await providers.remove('local');
    expect(await providers.verifyWorkerSecret('local', 'first-secret')).toBe('unknown_provider');
    await providers.create({ name: 'local', secret: 'first-secret' });
    scrypt.mockClear();
    expect(await providers.verifyWorkerSecret('local', 'first-secret')).toBe('ok');
    expect(scrypt).toHaveBeenCalledTimes(1);
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
