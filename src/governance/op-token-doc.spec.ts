import { createHmac, createPublicKey, verify } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FakeClock } from '../../test/support/fake-clock';
import { canonicalJson } from '../common/canonical-json';
import { NonceStore } from './nonce-store';
import { decodeOpToken, hasValidSignature } from './op-token';
import { parsePublicKey, privateKeyFromSeed, publicKeyText } from './op-token-ed25519';
import { OpTokenVerifier } from './op-token-verifier';

const DOC = readFileSync(join(__dirname, '../../docs/lifecycle.md'), 'utf8');
const line = (label: string) => {
  const m = new RegExp(`^${label.replace(/[()]/g, '\\$&')}:\\s+(\\S.*)$`, 'm').exec(DOC);
  if (!m) throw new Error(`docs/lifecycle.md has no "${label}:" line`);
  return m[1].trim();
};

/** The shared-key worked example of docs/lifecycle.md ("Shared-key compat"), which other tools are checked against. */
function workedExample(): Record<'key' | 'canonical' | 'signature' | 'token', string> {
  return { key: line('key file content'), canonical: line('canonical opToken'), signature: line('signature'), token: line('verifiedOpToken') };
}

class OnceNonces extends NonceStore {
  private readonly seen = new Set<string>();
  async claim(nonce: string): Promise<boolean> {
    if (this.seen.has(nonce)) return false;
    this.seen.add(nonce);
    return true;
  }
  async prune(): Promise<number> {
    return 0;
  }
}

describe('docs/lifecycle.md Ed25519 worked example', () => {
  it('its public keys come from its seeds, its signatures verify over the shown canonical text, and the gateway accepts the token', async () => {
    const canonical = line('signed canonical opToken');
    for (const name of ['alice', 'bob']) {
      const key = privateKeyFromSeed(Buffer.from(line(`${name} seed (hex)`), 'hex'));
      expect(publicKeyText(createPublicKey(key))).toBe(line(`${name} public key`));
      // Independently of the gateway's code: plain Ed25519 over the UTF-8 bytes, the key from its raw form.
      const raw = Buffer.from(line(`${name} public key`), 'base64');
      const publicKey = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') }, format: 'jwk' });
      expect(verify(null, Buffer.from(canonical, 'utf8'), publicKey, Buffer.from(line(`${name} signature`), 'base64url'))).toBe(true);
    }
    const token = line('Ed25519 verifiedOpToken');
    const outer = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
    expect(canonicalJson(outer.opToken)).toBe(canonical);
    expect(outer.signatures).toEqual({ alice: line('alice signature'), bob: line('bob signature') });
    const publicKeys = new Map(['alice', 'bob', 'carol'].map((n) => [n, parsePublicKey(line(`${n} public key`))]));
    const verifier = new OpTokenVerifier({ publicKeys, requiredSigners: 2 }, new OnceNonces(), new FakeClock(decodeOpToken(token).claims.issuedAt * 1000));
    await expect(verifier.verify(token, { operation: 'model-unload', modelId: 'llama3:8b', workerId: 'w-1' })).resolves.toMatchObject({
      signers: ['alice', 'bob'],
      nonce: '9f2c4e7a1b3d5f60',
    });
  });
});

describe('docs/lifecycle.md shared-key worked example', () => {
  it('its canonical JSON, signature and token are what the format says, and the gateway verifies the token', async () => {
    const { key, canonical, signature, token } = workedExample();
    // Independently of the gateway's code: the HMAC of the shown canonical text under the shown key.
    expect(createHmac('sha256', key).update(canonical, 'utf8').digest('hex')).toBe(signature);
    const outer = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
    expect(outer.signature).toBe(signature);
    expect(canonicalJson(outer.opToken)).toBe(canonical);

    const decoded = decodeOpToken(token);
    expect(hasValidSignature(Buffer.from(key), decoded)).toBe(true);
    const clock = new FakeClock(decoded.claims.issuedAt * 1000);
    const verifier = new OpTokenVerifier(
      { publicKeys: new Map(), sharedKey: Buffer.from(key), sharedKeySigners: ['alice', 'bob', 'carol'], requiredSigners: 2 },
      new OnceNonces(),
      clock,
    );
    await expect(verifier.verify(token, { operation: 'model-unload', modelId: 'llama3:8b' })).resolves.toMatchObject({
      signers: ['alice', 'bob'],
      nonce: '9f2c4e7a1b3d5f60',
    });
  });
});
