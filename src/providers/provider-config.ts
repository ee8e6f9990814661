import { isDeepStrictEqual } from 'node:util';
import type { ProviderConfig } from '../config';
import { hashSecret, verifySecret } from '../common/secret-hash';
import type { PoolAlias, Provider } from './provider';
import type { ProviderRecord } from './provider-store';

/** The settings a reload compares and rewrites: what the file says (pool aliases are not in it). */
const CONFIG_FIELDS = [
  'secretHash',
  'enabled',
  'maxQueueLen',
  'queueTimeoutMs',
  'requestTimeoutMs',
  'firstByteTimeoutMs',
  'maxModelsPerWorker',
  'models',
  'priority',
  'capabilities',
  'costPerGpuHour',
  'gpusPerWorker',
  'translation',
] as const;

/** The provider record the configuration describes; `previous` lends its hash (if the secret still matches) and its pool aliases. */
export async function recordFromConfig(pc: ProviderConfig, previous: ProviderRecord | undefined): Promise<ProviderRecord> {
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
    firstByteTimeoutMs: pc.firstByteTimeoutMs ?? null,
    maxModelsPerWorker: pc.maxModelsPerWorker,
    models: pc.models,
    priority: pc.priority ?? null,
    capabilities: pc.capabilities,
    aliases: previous?.aliases ?? {},
    costPerGpuHour: pc.costPerGpuHour ?? null,
    gpusPerWorker: pc.gpusPerWorker ?? null,
    translation: pc.translation ?? null,
    source: 'config',
  };
}

/** The configured settings of `record` that differ from the provider's (empty when none do). */
export function configPatch(p: Provider, record: ProviderRecord): Partial<ProviderRecord> {
  const patch: Partial<ProviderRecord> = {};
  for (const key of CONFIG_FIELDS) if (!isDeepStrictEqual(p[key], record[key])) (patch as Record<string, unknown>)[key] = record[key];
  return patch;
}

/** Every stored setting of `record` that differs from the provider's (a change made on another replica). */
export function storedPatch(p: Provider, record: ProviderRecord): Partial<ProviderRecord> {
  const patch = configPatch(p, record);
  if (!isDeepStrictEqual(p.aliases, record.aliases ?? {})) patch.aliases = record.aliases ?? {};
  if (p.source !== record.source) patch.source = record.source;
  return patch;
}

/** Pool-scoped aliases of every provider, by alias; an alias held by two providers keeps the first (`warn` says so). */
export function indexPoolAliases(providers: Iterable<Provider>, warn: (message: string) => void): Map<string, PoolAlias> {
  const index = new Map<string, PoolAlias>();
  for (const provider of providers) {
    for (const [alias, target] of Object.entries(provider.aliases)) {
      const owner = index.get(alias);
      if (owner) warn(`pool alias "${alias}" is held by providers "${owner.provider.name}" and "${provider.name}": "${owner.provider.name}" keeps it`);
      else index.set(alias, { provider, target });
    }
  }
  return index;
}
