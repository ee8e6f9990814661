import { generateKeyPairSync, KeyObject } from 'node:crypto';
import { FakeClock } from '../../test/support/fake-clock';
import { canonicalJson } from '../common/canonical-json';
import { GatewayError } from '../common/gateway-error';
import { NonceStore } from './nonce-store';
import { BoundClaims, decodeOpToken, OpTokenClaims } from './op-token';
import { addSignature, encodeToken, parsePublicKey, publicKeyText, signClaims, unsignedToken } from './op-token-ed25519';
import { OpTokenVerifier, RequestedOperation } from './op-token-verifier';

class MemoryNonces extends NonceStore {
  readonly seen = new Set<string>();
  async claim(nonce: string): Promise<boolean> {
    if (this.seen.has(nonce)) return false;
    this.seen.add(nonce);
    return true;
  }
  async prune(): Promise<number> {
    return 0;
  }
}

function keyPair(): { privateKey: KeyObject; publicKey: KeyObject } {
  return generateKeyPairSync('ed25519');
}

const alice = keyPair();
const bob = keyPair();
const carol = keyPair();
const mallory = keyPair();
const PUBLIC = new Map([
  ['alice', alice.publicKey],
  ['bob', bob.publicKey],
  ['carol', carol.publicKey],
]);

/** Everything a load can bind, as a request would carry it. */
const FULL_LOAD: RequestedOperation = {
  operation: 'model-load',
  modelId: 'llama3:70b',
  evictModel: 'llama3:8b',
  pool: 'gpu-a',
  workerId: 'w-1',
  replicas: 1,
  quantization: 'q4_K_M',
  gpuMemoryBudgetMB: 40000,
  maxContextLength: 8192,
};

describe('OpTokenVerifier, Ed25519 M of N (2 of alice, bob, carol)', () => {
  let clock: FakeClock;
  let nonces: MemoryNonces;
  let verifier: OpTokenVerifier;
  const now = () => Math.floor(clock.now() / 1000);
  /** A token for `claims` signed by each [name, private key] given. */
  const token = (signers: Array<[string, KeyObject]>, claims: Partial<OpTokenClaims> = {}): string => {
    let t = unsignedToken({ ...FULL_LOAD, issuedAt: now(), ...claims } as BoundClaims & { issuedAt: number });
    for (const [name, key] of signers) t = addSignature(t, name, key);
    return t;
  };
  const code = async (t: unknown, requested: RequestedOperation = FULL_LOAD): Promise<string> => {
    try {
      await verifier.verify(t, requested);
      return 'ok';
    } catch (e) {
      if (!(e instanceof GatewayError)) throw e;
      return e.code;
    }
  };
  const outer = (t: string) => JSON.parse(Buffer.from(t, 'base64url').toString('utf8'));
  const encode = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');

  beforeEach(() => {
    clock = new FakeClock(Date.UTC(2026, 11, 5, 10, 0, 0));
    nonces = new MemoryNonces();
    verifier = new OpTokenVerifier({ publicKeys: PUBLIC, requiredSigners: 2 }, nonces, clock);
  });

  it('M distinct valid signatures pass, in any order, and the claims name the signers that verified', async () => {
    const t = token(
      [
        ['carol', carol.privateKey],
        ['alice', alice.privateKey],
      ],
      { nonce: 'ed-ok-0001' },
    );
    await expect(verifier.verify(t, FULL_LOAD)).resolves.toEqual({ ...FULL_LOAD, issuedAt: now(), nonce: 'ed-ok-0001', signers: ['carol', 'alice'] });
    expect(
      await code(
        token([
          ['alice', alice.privateKey],
          ['bob', bob.privateKey],
          ['carol', carol.privateKey],
        ]),
      ),
    ).toBe('ok');
  });

  it('each signer signs the same canonical bytes: a signature made independently of the CLI verifies', async () => {
    const opToken = { nonce: 'by-hand-0001', operation: 'model-unload', modelId: 'm', issuedAt: now() };
    expect(canonicalJson(opToken)).toBe(`{"issuedAt":${now()},"modelId":"m","nonce":"by-hand-0001","operation":"model-unload"}`);
    const t = encodeToken(
      opToken,
      new Map([
        ['alice', signClaims(alice.privateKey, opToken)],
        ['bob', signClaims(bob.privateKey, opToken)],
      ]),
    );
    expect(await code(t, { operation: 'model-unload', modelId: 'm' })).toBe('ok');
  });

  it('M-1 valid signatures and one bad one (a known signer, the wrong key) is op_token_bad_signature, before the nonce is spent', async () => {
    const t = token(
      [
        ['alice', alice.privateKey],
        ['bob', mallory.privateKey],
      ],
      { nonce: 'ed-bad-0001' },
    );
    await expect(verifier.verify(t, FULL_LOAD)).rejects.toMatchObject({
      code: 'op_token_bad_signature',
      message: expect.stringContaining('signature of bob does not verify'),
    });
    expect(nonces.seen.has('ed-bad-0001')).toBe(false);
  });

  it('M valid signatures plus a bad one from a known signer still fail (a bad signature is never ignored)', async () => {
    const t = outer(
      token([
        ['alice', alice.privateKey],
        ['bob', bob.privateKey],
        ['carol', carol.privateKey],
      ]),
    );
    t.signatures.carol = t.signatures.alice; // alice's signature presented as carol's
    expect(await code(encode(t))).toBe('op_token_bad_signature');
  });

  it('M-1 valid signatures alone: op_token_insufficient_signers', async () => {
    expect(await code(token([['alice', alice.privateKey]]))).toBe('op_token_insufficient_signers');
  });

  it('a signature counts once: the same signer twice in the JSON is one signature', async () => {
    const t = token([['alice', alice.privateKey]]);
    const sig = outer(t).signatures.alice;
    const json = Buffer.from(t, 'base64url').toString('utf8').replace(`"alice":"${sig}"`, `"alice":"${sig}","alice":"${sig}"`);
    expect(json.split(sig).length - 1).toBe(2);
    expect(await code(Buffer.from(json).toString('base64url'))).toBe('op_token_insufficient_signers');
  });

  it('an unknown signer beside M valid ones is op_token_unknown_signer; a token only strangers signed is op_token_bad_signature and spends no nonce', async () => {
    expect(
      await code(
        token([
          ['alice', alice.privateKey],
          ['bob', bob.privateKey],
          ['mallory', mallory.privateKey],
        ]),
      ),
    ).toBe('op_token_unknown_signer');
    const strangers = token(
      [
        ['mallory', mallory.privateKey],
        ['eve', mallory.privateKey],
      ],
      { nonce: 'strangers-1' },
    );
    expect(await code(strangers)).toBe('op_token_bad_signature');
    expect(nonces.seen.has('strangers-1')).toBe(false);
  });

  it('an unsigned token is op_token_bad_signature', async () => {
    await expect(verifier.verify(token([]), FULL_LOAD)).rejects.toMatchObject({
      code: 'op_token_bad_signature',
      message: expect.stringContaining('carries no signature'),
    });
  });

  it('claims altered after signing (a bigger memory budget) fail every signature', async () => {
    const t = outer(
      token([
        ['alice', alice.privateKey],
        ['bob', bob.privateKey],
      ]),
    );
    t.opToken.gpuMemoryBudgetMB = 80000;
    expect(await code(encode(t), { ...FULL_LOAD, gpuMemoryBudgetMB: 80000 })).toBe('op_token_bad_signature');
  });

  it('keeps the order: then time (±5 min), then the nonce, then the request', async () => {
    const signers: Array<[string, KeyObject]> = [
      ['alice', alice.privateKey],
      ['bob', bob.privateKey],
    ];
    expect(await code(token(signers, { issuedAt: now() - 301 }))).toBe('op_token_expired');
    expect(await code(token(signers, { issuedAt: now() + 300 }))).toBe('ok');
    const once = token(signers, { nonce: 'ed-once-001' });
    expect(await code(once)).toBe('ok');
    expect(await code(once)).toBe('op_token_replayed');
    expect(await code(token(signers), { ...FULL_LOAD, modelId: 'other' })).toBe('op_token_mismatch');
  });

  describe('every bound field is compared, present-vs-absent included', () => {
    const signers: Array<[string, KeyObject]> = [
      ['alice', alice.privateKey],
      ['bob', bob.privateKey],
    ];
    const changed: Record<string, unknown> = {
      modelId: 'llama3:8b-instruct',
      evictModel: 'qwen2.5:7b',
      pool: 'gpu-b',
      workerId: 'w-2',
      replicas: 2,
      quantization: 'q8_0',
      gpuMemoryBudgetMB: 80000,
      maxContextLength: 131072,
    };
    it.each(Object.keys(changed))('%s: another value, or absent from the request, or absent from the token, is op_token_mismatch', async (field) => {
      expect(await code(token(signers), { ...FULL_LOAD, [field]: changed[field] })).toBe('op_token_mismatch');
      if (field !== 'modelId') {
        expect(await code(token(signers), { ...FULL_LOAD, [field]: undefined })).toBe('op_token_mismatch');
        expect(await code(token(signers, { [field]: undefined }), FULL_LOAD)).toBe('op_token_mismatch');
      }
    });

    it('operation, scope, tenantId and tag of a flush', async () => {
      const flush = (claims: Partial<OpTokenClaims>) =>
        token(signers, {
          operation: 'cache-flush',
          modelId: undefined,
          evictModel: undefined,
          replicas: undefined,
          quantization: undefined,
          gpuMemoryBudgetMB: undefined,
          maxContextLength: undefined,
          ...claims,
        });
      const asked: RequestedOperation = { operation: 'cache-flush', scope: 'tenant', tenantId: 't-1', pool: 'gpu-a', workerId: 'w-1' };
      expect(await code(flush({ scope: 'tenant', tenantId: 't-1' }), asked)).toBe('ok');
      expect(await code(flush({ scope: 'tenant', tenantId: 't-1' }), { ...asked, operation: 'model-unload' })).toBe('op_token_mismatch');
      expect(await code(flush({ scope: 'tenant', tenantId: 't-2' }), asked)).toBe('op_token_mismatch');
      expect(await code(flush({ scope: 'tenant' }), asked)).toBe('op_token_mismatch');
      expect(await code(flush({ scope: 'all', tenantId: 't-1' }), asked)).toBe('op_token_mismatch');
      expect(await code(flush({ scope: 'tag', tag: 'a' }), { ...asked, scope: 'tag', tenantId: undefined, tag: 'b' })).toBe('op_token_mismatch');
      expect(await code(flush({ scope: 'tag', tag: 'a' }), { ...asked, scope: 'tag', tenantId: undefined, tag: 'a' })).toBe('ok');
    });
  });

  it('with M = N every signer must sign', async () => {
    verifier = new OpTokenVerifier({ publicKeys: PUBLIC, requiredSigners: 3 }, nonces, clock);
    expect(
      await code(
        token([
          ['alice', alice.privateKey],
          ['bob', bob.privateKey],
        ]),
      ),
    ).toBe('op_token_insufficient_signers');
    expect(
      await code(
        token([
          ['alice', alice.privateKey],
          ['bob', bob.privateKey],
          ['carol', carol.privateKey],
        ]),
      ),
    ).toBe('ok');
  });

  it.each([
    ['signature and signatures together', (o: any) => ({ ...o, signature: 'a'.repeat(64) })],
    ['signatures not an object', (o: any) => ({ ...o, signatures: ['x'] })],
    ['a signature that is not 64 bytes', (o: any) => ({ ...o, signatures: { alice: Buffer.alloc(32).toString('base64url') } })],
    ['signers inside an Ed25519 opToken', (o: any) => ({ ...o, opToken: { ...o.opToken, signers: ['alice'] } })],
    ['replicas 0', (o: any) => ({ ...o, opToken: { ...o.opToken, replicas: 0 } })],
    ['a memory budget as a string', (o: any) => ({ ...o, opToken: { ...o.opToken, gpuMemoryBudgetMB: '40000' } })],
    ['an unknown outer field', (o: any) => ({ ...o, extra: 1 })],
  ])('malformed (%s): op_token_malformed', async (_what, change) => {
    expect(await code(encode(change(outer(token([['alice', alice.privateKey]])))))).toBe('op_token_malformed');
  });

  it('adding a signature keeps the others and the claims; re-signing replaces only that signer', () => {
    const first = token([['alice', alice.privateKey]]);
    const second = addSignature(first, 'bob', bob.privateKey);
    expect(outer(second).signatures.alice).toBe(outer(first).signatures.alice);
    expect(outer(second).opToken).toEqual(outer(first).opToken);
    const decoded = decodeOpToken(addSignature(second, 'bob', bob.privateKey));
    expect(decoded.claims.signers).toEqual(['alice', 'bob']);
  });
});

describe('public key encodings', () => {
  it('base64 of the raw 32 bytes (standard or URL alphabet, padding optional) and base64 SPKI DER name the same key', () => {
    const { publicKey } = keyPair();
    const raw = publicKeyText(publicKey);
    expect(Buffer.from(raw, 'base64')).toHaveLength(32);
    const der = publicKey.export({ format: 'der', type: 'spki' }).toString('base64');
    for (const text of [raw, raw.replace(/=+$/, ''), Buffer.from(raw, 'base64').toString('base64url'), der, ` ${der}\n`]) {
      expect(publicKeyText(parsePublicKey(text))).toBe(raw);
    }
  });

  it.each([
    ['not base64', 'not a key!'],
    ['31 bytes', Buffer.alloc(31).toString('base64')],
    ['an RSA SPKI', generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey.export({ format: 'der', type: 'spki' }).toString('base64')],
  ])('refuses %s', (_what, text) => {
    expect(() => parsePublicKey(text)).toThrow();
  });
});
