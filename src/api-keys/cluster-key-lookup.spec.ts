import { generateKey, hashKey } from './api-key-material';
import type { ApiKeyRecord } from './api-key-store';
import { ClusterKeyLookup, ClusterKeyLookupOptions } from './cluster-key-lookup';

function record(key: string): ApiKeyRecord {
  return {
    id: 'key_1',
    name: 'k',
    keyHash: hashKey(key),
    prefix: key.slice(0, 11),
    tenant: 't',
    enabled: true,
    source: 'admin',
    rpm: null,
    tpm: null,
    priority: null,
    models: null,
    expiresAt: null,
    createdAt: 1,
    lastUsedAt: null,
    revokedAt: null,
  };
}

function harness(overrides: Partial<ClusterKeyLookupOptions> = {}) {
  const stored = new Map<string, ApiKeyRecord>();
  const held = new Set<string>();
  const finds: string[] = [];
  let now = 1000;
  const lookup = new ClusterKeyLookup({
    knows: (hash) => held.has(hash),
    find: async (hash) => {
      finds.push(hash);
      return stored.get(hash);
    },
    adopt: (r) => void held.add(r.keyHash),
    blocked: () => false,
    now: () => now,
    negativeTtlMs: 5000,
    ...overrides,
  });
  return { lookup, stored, held, finds, advance: (ms: number) => (now += ms) };
}

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

describe('ClusterKeyLookup', () => {
  it('adopts a stored key this replica does not hold, once, and never looks up a key it holds', async () => {
    const h = harness();
    const key = generateKey();
    h.stored.set(hashKey(key), record(key));
    await h.lookup.prepare(bearer(key), '10.0.0.1');
    expect(h.held.has(hashKey(key))).toBe(true);
    await h.lookup.prepare(bearer(key), '10.0.0.1');
    await h.lookup.prepare({ 'x-api-key': key }, '10.0.0.1');
    expect(h.finds).toHaveLength(1);
  });

  it('remembers an unknown key for the negative TTL, then asks again', async () => {
    const h = harness();
    const key = generateKey();
    await h.lookup.prepare(bearer(key), undefined);
    await h.lookup.prepare(bearer(key), undefined);
    expect(h.finds).toHaveLength(1);
    h.advance(5001);
    await h.lookup.prepare(bearer(key), undefined);
    expect(h.finds).toHaveLength(2);
  });

  it('asks nothing for requests without a key in the gateway format, or from a client already blocked', async () => {
    const h = harness({ blocked: () => true });
    await h.lookup.prepare({}, undefined);
    await h.lookup.prepare(bearer('a-backend-token'), undefined);
    await h.lookup.prepare(bearer('sb-with spaces'), undefined);
    await h.lookup.prepare(bearer(generateKey()), undefined);
    expect(h.finds).toHaveLength(0);
  });

  it('one lookup per hash at a time, bounded: a silent store lets the request go on without the key', async () => {
    let calls = 0;
    const h = harness({ find: () => (calls++, new Promise<ApiKeyRecord | undefined>(() => undefined)), timeoutMs: 30 });
    const key = generateKey();
    await Promise.all([h.lookup.prepare(bearer(key), undefined), h.lookup.prepare(bearer(key), undefined)]);
    expect(calls).toBe(1);
    expect(h.held.size).toBe(0);
  });

  it('a failing store is judged on what memory holds, never thrown', async () => {
    const h = harness({ find: async () => Promise.reject(new Error('database down')) });
    await expect(h.lookup.prepare(bearer(generateKey()), undefined)).resolves.toBeUndefined();
  });
});
