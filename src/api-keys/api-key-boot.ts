import type { ConfiguredApiKey } from '../config/sections/api-keys';
import type { ApiKeyRecord, ApiKeyStore } from './api-key-store';

export function configKeyId(name: string): string {
  return `cfg_${name}`;
}

/**
 * Loads the stored keys and rewrites those of the config file: a key removed from the file is
 * deleted; a key revoked through the admin API stays revoked while the file holds the same hash.
 * Returns the keys to hold, and `enabled` as the file declares it for the file's keys.
 */
export async function loadKeys(
  store: ApiKeyStore,
  configured: ConfiguredApiKey[],
  now: number,
  log: { warn(message: string): void },
): Promise<{ records: ApiKeyRecord[]; configEnabled: Map<string, boolean> }> {
  const configEnabled = new Map<string, boolean>();
  const stored = await store.loadAll();
  const configIds = new Set(configured.map((k) => configKeyId(k.name)));
  const kept = new Map<string, ApiKeyRecord>();
  for (const r of stored) {
    if (r.source === 'config' && !configIds.has(r.id)) await store.delete(r.id);
    else kept.set(r.id, r);
  }
  // Ids by key hash, so finding a clash is a lookup, not a pass over every key per configured key.
  const idsByHash = new Map<string, Set<string>>();
  const hashed = (r: ApiKeyRecord) => {
    let ids = idsByHash.get(r.keyHash);
    if (!ids) idsByHash.set(r.keyHash, (ids = new Set()));
    ids.add(r.id);
  };
  for (const r of kept.values()) hashed(r);
  for (const k of configured) {
    const id = configKeyId(k.name);
    const clash = [...(idsByHash.get(k.keySha256) ?? [])].find((other) => other !== id);
    if (clash) throw new Error(`keys: "${k.name}" in the config file is the same key as API key ${clash}; remove one of them`);
    let prev = kept.get(id);
    if (prev && (prev.source !== 'config' || prev.keyHash !== k.keySha256)) {
      await store.delete(id); // new key material under the same name: a new key
      prev = undefined;
    }
    const revokedByApi = prev !== undefined && prev.revokedAt !== null;
    if (revokedByApi) log.warn(`API key ${id} from the config file was revoked through the admin API and stays revoked`);
    const record: ApiKeyRecord = {
      id,
      name: k.name,
      keyHash: k.keySha256,
      prefix: '',
      tenant: k.tenant,
      enabled: k.enabled && !revokedByApi,
      source: 'config',
      rpm: k.rpm ?? null,
      tpm: k.tpm ?? null,
      maxConcurrent: k.maxConcurrent ?? null,
      priority: k.priority ?? null,
      models: k.models ?? null,
      expiresAt: k.expiresAt ?? null,
      createdAt: prev?.createdAt ?? now,
      lastUsedAt: prev?.lastUsedAt ?? null,
      revokedAt: revokedByApi ? prev!.revokedAt : null,
    };
    await store.save(record);
    const replaced = kept.get(id);
    if (replaced) idsByHash.get(replaced.keyHash)?.delete(id);
    kept.set(id, record);
    hashed(record);
    configEnabled.set(id, k.enabled);
  }
  return { records: [...kept.values()], configEnabled };
}
