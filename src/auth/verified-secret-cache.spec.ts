import { VerifiedSecretCache } from './verified-secret-cache';

describe('VerifiedSecretCache', () => {
  it('matches only the remembered secret, for its provider, against the same stored hash', () => {
    const cache = new VerifiedSecretCache();
    cache.remember('a', 'right', 'hash-1');
    expect(cache.matches('a', 'right', 'hash-1')).toBe(true);
    expect(cache.matches('a', 'wrong', 'hash-1')).toBe(false);
    expect(cache.matches('b', 'right', 'hash-1')).toBe(false);
    expect(cache.matches('a', 'right', 'hash-2')).toBe(false);
    // An entry for a replaced hash is gone for good, even if the old hash came back.
    expect(cache.matches('a', 'right', 'hash-1')).toBe(false);
  });

  it('forgets a provider and only that provider', () => {
    const cache = new VerifiedSecretCache();
    cache.remember('a', 's1', 'h');
    cache.remember('a', 's2', 'h');
    cache.remember('b', 's1', 'h');
    cache.forget('a');
    expect(cache.size()).toBe(1);
    expect(cache.matches('b', 's1', 'h')).toBe(true);
  });

  it('stays within its bound, evicting the least recently used entry', () => {
    const cache = new VerifiedSecretCache(3);
    for (const s of ['s1', 's2', 's3']) cache.remember('a', s, 'h');
    expect(cache.matches('a', 's1', 'h')).toBe(true); // s2 is now the oldest
    cache.remember('a', 's4', 'h');
    expect(cache.size()).toBe(3);
    expect(cache.matches('a', 's2', 'h')).toBe(false);
    expect(['s1', 's3', 's4'].every((s) => cache.matches('a', s, 'h'))).toBe(true);
  });

  it('holds no secret in its keys', () => {
    const cache = new VerifiedSecretCache();
    cache.remember('a', 'very-secret-value', 'h');
    const keys = [...(cache as unknown as { entries: Map<string, unknown> }).entries.keys()];
    expect(keys.join()).not.toContain('very-secret-value');
  });
});
