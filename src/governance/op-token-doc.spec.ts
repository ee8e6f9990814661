import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FakeClock } from '../../test/support/fake-clock';
import { canonicalJson } from '../common/canonical-json';
import { NonceStore } from './nonce-store';
import { decodeOpToken, hasValidSignature } from './op-token';
import { OpTokenVerifier } from './op-token-verifier';

/** The worked example of docs/lifecycle.md ("Minting tokens"), which other tools are checked against. */
function workedExample(): Record<'key' | 'canonical' | 'signature' | 'token', string> {
  const doc = readFileSync(join(__dirname, '../../docs/lifecycle.md'), 'utf8');
  const line = (label: string) => {
    const m = new RegExp(`^${label}:\\s+(\\S.*)$`, 'm').exec(doc);
    if (!m) throw new Error(`docs/lifecycle.md has no "${label}:" line`);
    return m[1].trim();
  };
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

describe('docs/lifecycle.md worked example', () => {
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
    const verifier = new OpTokenVerifier({ publicKeys: new Map(), sharedKey: Buffer.from(key), sharedKeySigners: ['alice', 'bob', 'carol'], requiredSigners: 2 }, new OnceNonces(), clock);
    await expect(verifier.verify(token, { operation: 'model-unload', modelId: 'llama3:8b' })).resolves.toMatchObject({ signers: ['alice', 'bob'], nonce: '9f2c4e7a1b3d5f60' });
  });
});
