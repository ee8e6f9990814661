import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { FakeClock } from '../../test/support/fake-clock';
import { GatewayError } from '../common/gateway-error';
import { createDataSource } from '../database/data-source-options';
import { NonceStore } from './nonce-store';
import { TypeOrmNonceStore } from './nonce-store.typeorm';
import { canonicalJson } from '../common/canonical-json';
import { mintOpToken, OpTokenClaims } from './op-token';
import { OpTokenVerifier, RequestedOperation } from './op-token-verifier';
import { createHmac } from 'node:crypto';
import { OpTokenNonceEntity } from './op-token-nonce.entity';

const KEY = Buffer.from('governance-test-key');
const SIGNERS = ['alice', 'bob', 'carol'];

/** Nonces in memory, for the checks that are not about persistence. */
class MemoryNonces extends NonceStore {
  readonly seen = new Map<string, number>();
  async claim(nonce: string, expiresAt: number, now: number): Promise<boolean> {
    const until = this.seen.get(nonce);
    if (until !== undefined && until >= now) return false;
    this.seen.set(nonce, expiresAt);
    return true;
  }
  async prune(): Promise<number> {
    return 0;
  }
}

const LOAD: RequestedOperation = { operation: 'model-load', modelId: 'llama3:70b' };

/** The seed's shared-key (HMAC) format, accepted with GOVERNANCE_SHARED_KEY_COMPAT (Ed25519 M-of-N: op-token-ed25519.spec.ts). */
describe('OpTokenVerifier, shared-key compat format', () => {
  let clock: FakeClock;
  let nonces: MemoryNonces;
  let verifier: OpTokenVerifier;
  const nowSecs = () => Math.floor(clock.now() / 1000);
  const mint = (claims: Partial<OpTokenClaims> = {}, key = KEY) =>
    mintOpToken(key, { operation: 'model-load', modelId: 'llama3:70b', issuedAt: nowSecs(), signers: ['alice', 'bob'], ...claims });
  const code = async (token: unknown, requested: RequestedOperation = LOAD): Promise<string> => {
    try {
      await verifier.verify(token, requested);
      return 'ok';
    } catch (e) {
      if (!(e instanceof GatewayError)) throw e;
      return e.code;
    }
  };

  beforeEach(() => {
    clock = new FakeClock(Date.UTC(2026, 11, 5, 10, 0, 0));
    nonces = new MemoryNonces();
    verifier = new OpTokenVerifier({ publicKeys: new Map(), sharedKey: KEY, sharedKeySigners: SIGNERS, requiredSigners: 2 }, nonces, clock);
  });

  it('accepts a well-formed token of known signers and answers its claims', async () => {
    const claims = await verifier.verify(mint({ nonce: 'nonce-0001' }), LOAD);
    expect(claims).toEqual({ operation: 'model-load', modelId: 'llama3:70b', issuedAt: nowSecs(), signers: ['alice', 'bob'], nonce: 'nonce-0001' });
  });

  it('signs the canonical JSON of opToken: a token built by hand with keys in any order verifies', async () => {
    const opToken = { signers: ['bob', 'alice'], nonce: 'hand-made-1', issuedAt: nowSecs(), modelId: 'llama3:70b', operation: 'model-load' };
    const sorted = '{"issuedAt":' + nowSecs() + ',"modelId":"llama3:70b","nonce":"hand-made-1","operation":"model-load","signers":["bob","alice"]}';
    expect(canonicalJson(opToken)).toBe(sorted);
    const signature = createHmac('sha256', KEY).update(sorted).digest('hex');
    const token = Buffer.from(JSON.stringify({ signature, opToken }, null, 2)).toString('base64url');
    expect(await code(token)).toBe('ok');
  });

  describe('refuses, each failure with its own code, in the documented order', () => {
    it('no token: op_token_missing', async () => {
      expect(await code(undefined)).toBe('op_token_missing');
      expect(await code('')).toBe('op_token_missing');
    });

    it.each([
      ['not base64url', 'not a token!'],
      ['not JSON', Buffer.from('{opToken').toString('base64url')],
      ['no signature', Buffer.from(JSON.stringify({ opToken: { operation: 'model-load' } })).toString('base64url')],
      [
        'a field that is not an op token field',
        Buffer.from(
          JSON.stringify({
            opToken: { operation: 'model-load', modelId: 'm', issuedAt: 1, signers: ['a'], nonce: 'n-12345678', priority: 1 },
            signature: 'a'.repeat(64),
          }),
        ).toString('base64url'),
      ],
      [
        'an unknown operation',
        Buffer.from(
          JSON.stringify({ opToken: { operation: 'model-delete', modelId: 'm', issuedAt: 1, signers: ['a'], nonce: 'n-12345678' }, signature: 'a'.repeat(64) }),
        ).toString('base64url'),
      ],
      [
        'issuedAt in milliseconds as a string',
        Buffer.from(
          JSON.stringify({ opToken: { operation: 'model-load', modelId: 'm', issuedAt: '1', signers: ['a'], nonce: 'n-12345678' }, signature: 'a'.repeat(64) }),
        ).toString('base64url'),
      ],
      [
        'a short nonce',
        Buffer.from(
          JSON.stringify({ opToken: { operation: 'model-load', modelId: 'm', issuedAt: 1, signers: ['a'], nonce: 'abc' }, signature: 'a'.repeat(64) }),
        ).toString('base64url'),
      ],
    ])('malformed (%s): op_token_malformed, a 400', async (_why, token) => {
      expect(await code(token)).toBe('op_token_malformed');
    });

    it('base64url is strict: only the canonical encoding of the token (padded or not) passes, and its bytes must be UTF-8', async () => {
      const valid = mint({ nonce: 'strict-b64-1' });
      const last = valid[valid.length - 1];
      const flipped = valid.slice(0, -1) + String.fromCharCode(last.charCodeAt(0) ^ 1);
      const variants = [`${valid}A`, `${valid}${valid.length % 4 === 0 ? '=' : '==='}`, flipped];
      // The same bytes, so without strictness each of these would be the valid token (and verify).
      expect(variants.filter((v) => Buffer.from(v, 'base64url').equals(Buffer.from(valid, 'base64url')))).not.toHaveLength(0);
      for (const variant of variants) expect([variant, await code(variant)]).toEqual([variant, 'op_token_malformed']);
      const padded = valid + '='.repeat((4 - (valid.length % 4)) % 4);
      expect(await code(padded)).toBe('ok');

      const latin1 = Buffer.concat([
        Buffer.from('{"opToken":{"operation":"model-load","modelId":"'),
        Buffer.from([0xe9]),
        Buffer.from(`","issuedAt":${nowSecs()},"signers":["alice","bob"],"nonce":"bad-utf8-1"},"signature":"${'a'.repeat(64)}"}`),
      ]);
      expect(await code(latin1.toString('base64url'))).toBe('op_token_malformed');
    });

    it('a token that is not a string: op_token_malformed', async () => {
      expect(await code({ opToken: {} })).toBe('op_token_malformed');
    });

    it('signature first: signed with another key, even expired, replayed and mismatched, is op_token_bad_signature', async () => {
      const forged = mint({ issuedAt: nowSecs() - 3600, modelId: 'other', signers: ['mallory'], nonce: 'seen-nonce' }, Buffer.from('wrong-key'));
      nonces.seen.set('seen-nonce', Infinity);
      expect(await code(forged)).toBe('op_token_bad_signature');
    });

    it('an altered token (a signer added after signing) fails the signature', async () => {
      const outer = JSON.parse(Buffer.from(mint(), 'base64url').toString());
      outer.opToken.signers.push('carol');
      expect(await code(Buffer.from(JSON.stringify(outer)).toString('base64url'))).toBe('op_token_bad_signature');
    });

    it('then time: an expired token whose nonce was seen is op_token_expired, and its nonce is not consumed', async () => {
      nonces.seen.set('old-nonce-1', Infinity);
      expect(await code(mint({ issuedAt: nowSecs() - 301, nonce: 'old-nonce-1', modelId: 'other' }))).toBe('op_token_expired');
      expect(await code(mint({ issuedAt: nowSecs() - 301, nonce: 'fresh-nonce-1' }))).toBe('op_token_expired');
      expect(nonces.seen.has('fresh-nonce-1')).toBe(false);
    });

    it('then the nonce: a second use is op_token_replayed, even for a mismatched request', async () => {
      const token = mint({ nonce: 'once-only-1' });
      expect(await code(token)).toBe('ok');
      expect(await code(token)).toBe('op_token_replayed');
      expect(await code(token, { operation: 'model-unload', modelId: 'llama3:70b' })).toBe('op_token_replayed');
    });

    it('then the request: every bound field must be what it signed, absent ones absent', async () => {
      expect(await code(mint(), { operation: 'model-unload', modelId: 'llama3:70b' })).toBe('op_token_mismatch');
      expect(await code(mint(), { operation: 'model-load', modelId: 'llama3:8b' })).toBe('op_token_mismatch');
      const flush = (claims: Partial<OpTokenClaims>) => mint({ operation: 'cache-flush', modelId: undefined, scope: 'tenant', ...claims });
      const tenantFlush: RequestedOperation = { operation: 'cache-flush', scope: 'tenant', tenantId: 'community-x' };
      expect(await code(flush({ tenantId: 'community-x' }), tenantFlush)).toBe('ok');
      expect(await code(flush({}), tenantFlush)).toBe('op_token_mismatch');
      expect(await code(flush({ scope: 'all', tenantId: 'community-x' }), tenantFlush)).toBe('op_token_mismatch');
      expect(await code(flush({ tenantId: 'community-y' }), tenantFlush)).toBe('op_token_mismatch');
      expect(await code(flush({ scope: 'model', modelId: 'a' }), { operation: 'cache-flush', scope: 'model', modelId: 'b' })).toBe('op_token_mismatch');
      expect(await code(mint({ workerId: 'w-1' }), { ...LOAD, workerId: 'w-2' })).toBe('op_token_mismatch');
      expect(await code(mint(), { ...LOAD, pool: 'gpu-a' })).toBe('op_token_mismatch');
    });

    it('a load token binds evictModel both ways: that model and no other, and none when it names none', async () => {
      const evicting = (evictModel?: string): RequestedOperation => ({ ...LOAD, evictModel });
      expect(await code(mint({ evictModel: 'old-model' }), evicting('old-model'))).toBe('ok');
      expect(await code(mint({ evictModel: 'old-model' }), evicting('production-model'))).toBe('op_token_mismatch');
      expect(await code(mint({ evictModel: 'old-model' }), evicting(undefined))).toBe('op_token_mismatch');
      expect(await code(mint(), evicting('old-model'))).toBe('op_token_mismatch');
    });

    it('without compat (no shared key configured) a shared-key token is op_token_bad_signature', async () => {
      verifier = new OpTokenVerifier({ publicKeys: new Map(), requiredSigners: 2 }, nonces, clock);
      await expect(verifier.verify(mint({ nonce: 'no-compat-1' }), LOAD)).rejects.toMatchObject({
        code: 'op_token_bad_signature',
        message: expect.stringContaining('GOVERNANCE_SHARED_KEY_COMPAT is off'),
      });
      expect(nonces.seen.has('no-compat-1')).toBe(false);
    });

    it('mismatch comes before the signers: a mismatched token signed by strangers is op_token_mismatch', async () => {
      expect(await code(mint({ signers: ['mallory'] }), { operation: 'model-load', modelId: 'other' })).toBe('op_token_mismatch');
    });
  });

  describe('M of N signers (2 of alice, bob, carol)', () => {
    it('exactly M distinct known signers pass, and all N too', async () => {
      expect(await code(mint({ signers: ['carol', 'alice'] }))).toBe('ok');
      expect(await code(mint({ signers: ['alice', 'bob', 'carol'] }))).toBe('ok');
    });

    it('M-1 signers: op_token_insufficient_signers', async () => {
      expect(await code(mint({ signers: ['alice'] }))).toBe('op_token_insufficient_signers');
    });

    it('a duplicate does not count twice: [alice, alice] is op_token_duplicate_signers (checked before unknown ones)', async () => {
      expect(await code(mint({ signers: ['alice', 'alice'] }))).toBe('op_token_duplicate_signers');
      expect(await code(mint({ signers: ['mallory', 'alice', 'alice'] }))).toBe('op_token_duplicate_signers');
    });

    it('an unknown signer is refused even beside M known ones (op_token_unknown_signer, before the count)', async () => {
      expect(await code(mint({ signers: ['alice', 'bob', 'mallory'] }))).toBe('op_token_unknown_signer');
      expect(await code(mint({ signers: ['mallory'] }))).toBe('op_token_unknown_signer');
    });

    it('names are compared exactly (case matters)', async () => {
      expect(await code(mint({ signers: ['Alice', 'bob'] }))).toBe('op_token_unknown_signer');
    });

    it('with M = N every signer must sign', async () => {
      verifier = new OpTokenVerifier({ publicKeys: new Map(), sharedKey: KEY, sharedKeySigners: SIGNERS, requiredSigners: 3 }, nonces, clock);
      expect(await code(mint({ signers: ['alice', 'bob'] }))).toBe('op_token_insufficient_signers');
      expect(await code(mint({ signers: ['alice', 'bob', 'carol'] }))).toBe('ok');
    });
  });

  describe('clock skew: issuedAt within ±5 minutes of the gateway clock', () => {
    it.each([
      ['exactly 300 s old', -300, 'ok'],
      ['301 s old', -301, 'op_token_expired'],
      ['exactly 300 s ahead', 300, 'ok'],
      ['301 s ahead', 301, 'op_token_expired'],
    ])('%s: %s', async (_what, offset, expected) => {
      expect(await code(mint({ issuedAt: nowSecs() + (offset as number) }))).toBe(expected);
    });

    it('says which way the clock is off', async () => {
      await expect(verifier.verify(mint({ issuedAt: nowSecs() - 400 }), LOAD)).rejects.toThrow('issued 400 s ago');
      await expect(verifier.verify(mint({ issuedAt: nowSecs() + 400 }), LOAD)).rejects.toThrow('400 s in the future');
    });
  });
});

describe('OpTokenVerifier with the nonce store in a SQLite file', () => {
  let dir: string;
  let url: string;
  const opened: DataSource[] = [];
  const clock = new FakeClock(Date.UTC(2026, 11, 5, 10, 0, 0));

  async function verifierOnFile(): Promise<{ verifier: OpTokenVerifier; store: TypeOrmNonceStore; ds: DataSource }> {
    const ds = createDataSource(url);
    await ds.initialize();
    await ds.runMigrations();
    opened.push(ds);
    const store = new TypeOrmNonceStore(ds.getRepository(OpTokenNonceEntity));
    return { verifier: new OpTokenVerifier({ publicKeys: new Map(), sharedKey: KEY, sharedKeySigners: SIGNERS, requiredSigners: 2 }, store, clock), store, ds };
  }

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'sb-op-token-'));
    url = `sqlite:${join(dir, 'switchboard.db')}`;
  });
  afterAll(async () => {
    for (const ds of opened) if (ds.isInitialized) await ds.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a token used before a restart is still refused after it (op_token_replayed)', async () => {
    const token = mintOpToken(KEY, { operation: 'model-unload', modelId: 'llama3:8b', issuedAt: Math.floor(clock.now() / 1000), signers: ['alice', 'bob'] });
    const first = await verifierOnFile();
    await first.verifier.verify(token, { operation: 'model-unload', modelId: 'llama3:8b' });
    await first.ds.destroy(); // the gateway stops

    const second = await verifierOnFile(); // and starts again on the same file
    await expect(second.verifier.verify(token, { operation: 'model-unload', modelId: 'llama3:8b' })).rejects.toMatchObject({ code: 'op_token_replayed' });
  });

  it('of two concurrent uses of one token, exactly one passes', async () => {
    const { verifier } = await verifierOnFile();
    const token = mintOpToken(KEY, { operation: 'model-load', modelId: 'race', issuedAt: Math.floor(clock.now() / 1000), signers: ['alice', 'bob'] });
    const results = await Promise.allSettled([
      verifier.verify(token, { operation: 'model-load', modelId: 'race' }),
      verifier.verify(token, { operation: 'model-load', modelId: 'race' }),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
  });

  it('spent nonces are pruned once no token could carry them any more', async () => {
    const { verifier, store, ds } = await verifierOnFile();
    await ds.getRepository(OpTokenNonceEntity).clear();
    const issuedAt = Math.floor(clock.now() / 1000);
    await verifier.verify(mintOpToken(KEY, { operation: 'model-load', modelId: 'p', issuedAt, signers: ['alice', 'bob'], nonce: 'prune-me-1' }), {
      operation: 'model-load',
      modelId: 'p',
    });
    expect(await store.prune(issuedAt * 1000 + 5 * 60_000)).toBe(0); // still inside the window
    expect(await store.prune(issuedAt * 1000 + 5 * 60_000 + 1)).toBe(1);
    expect(await ds.getRepository(OpTokenNonceEntity).count()).toBe(0);
  });
});
