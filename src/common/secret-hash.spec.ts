import { hashSecret, isWellFormedSecretHash, verifySecret } from './secret-hash';

describe('secret hashing', () => {
  it('stores a salted scrypt hash that verifies only the right secret', async () => {
    const a = await hashSecret('correct horse');
    const b = await hashSecret('correct horse');
    expect(a).toMatch(/^scrypt\$16384\$8\$1\$/);
    expect(a).not.toBe(b); // salted
    expect(a).not.toContain('correct horse');
    expect(await verifySecret('correct horse', a)).toBe(true);
    expect(await verifySecret('correct horsE', a)).toBe(false);
  });

  it('never throws on malformed or hostile hashes, it just does not match', async () => {
    const good = await hashSecret('x');
    for (const bad of ['scrypt$oops', good.replace('$16384$', '$1000$'), good.replace('$16384$', '$1073741824$'), 'plain-text', '']) {
      expect(isWellFormedSecretHash(bad)).toBe(false);
      await expect(verifySecret('x', bad)).resolves.toBe(false);
    }
    expect(isWellFormedSecretHash(good)).toBe(true);
  });
});
