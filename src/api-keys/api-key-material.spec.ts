import { createHash } from 'node:crypto';
import { scrubSecretFields, scrubSecretText } from '../observability/redaction';
import { displayPrefix, generateKey, hasOnlyKeyCharacters, hashKey, looksLikeGatewayKey } from './api-key-material';

describe('API key material', () => {
  it('is sb- and 32 random bytes in base64url', () => {
    const keys = new Set(Array.from({ length: 50 }, generateKey));
    expect(keys.size).toBe(50);
    for (const k of keys) {
      expect(k).toMatch(/^sb-[A-Za-z0-9_-]{43}$/);
      expect(Buffer.from(k.slice(3), 'base64url')).toHaveLength(32);
      expect(looksLikeGatewayKey(k)).toBe(true);
      expect(hasOnlyKeyCharacters(k)).toBe(true);
    }
  });

  it('is stored as its SHA-256 in hex and shown as sb- plus 8 characters', () => {
    const k = generateKey();
    expect(hashKey(k)).toBe(createHash('sha256').update(k).digest('hex'));
    expect(displayPrefix(k)).toBe(k.slice(0, 11));
  });

  it('takes only visible ASCII', () => {
    for (const bad of ['sb-a b', 'sb-a\tb', 'sb-é', 'sb-\x7f']) expect(hasOnlyKeyCharacters(bad)).toBe(false);
  });

  it('never appears in log text or fields', () => {
    const k = generateKey();
    expect(scrubSecretText(`{"msg":"client sent ${k} in x-api-key"}`)).toBe('{"msg":"client sent sb-[redacted] in x-api-key"}');
    expect(scrubSecretText(`Authorization: Bearer ${k}`)).not.toContain(k);
    // Names that only look alike are left alone.
    expect(scrubSecretText('worker sb-worker-east-1 connected')).toBe('worker sb-worker-east-1 connected');
    expect(scrubSecretFields({ headers: { 'x-api-key': k, authorization: `Bearer ${k}` }, key_sha256: hashKey(k) })).toEqual({
      headers: { 'x-api-key': '[redacted]', authorization: '[redacted]' },
      key_sha256: '[redacted]',
    });
  });
});
