import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeOpToken, hasValidSignature } from './op-token';
import { opTokenFor, parseOpTokenArgs } from './op-token-cli';
import { OpTokenIo, runOpToken } from './op-token-commands';
import { parsePublicKey, verifyClaims } from './op-token-ed25519';

describe('switchboard op-token arguments', () => {
  const env = { VERIFIED_OP_TOKEN_KEY_PATH: '/etc/switchboard/model-api.key' };

  it('takes --name value and --name=value; every bound field has its option', () => {
    expect(
      parseOpTokenArgs(
        [
          '--operation',
          'model-load',
          '--model=llama3:8b',
          '--evict',
          'old',
          '--pool',
          'gpu-a',
          '--worker',
          'w-1',
          '--replicas',
          '1',
          '--quantization',
          'q4',
          '--gpu-memory-budget-mb',
          '40000',
          '--max-context-length=8192',
        ],
        {},
      ),
    ).toEqual({
      claims: {
        operation: 'model-load',
        modelId: 'llama3:8b',
        evictModel: 'old',
        pool: 'gpu-a',
        workerId: 'w-1',
        replicas: 1,
        quantization: 'q4',
        gpuMemoryBudgetMB: 40000,
        maxContextLength: 8192,
      },
      signers: [],
    });
    expect(parseOpTokenArgs(['--operation', 'cache-flush', '--scope', 'tenant', '--tenant', 't1'], {}).claims).toEqual({
      operation: 'cache-flush',
      scope: 'tenant',
      tenantId: 't1',
    });
  });

  it('shared-key (compat) format: --key-file, or $VERIFIED_OP_TOKEN_KEY_PATH when --signer comes without --key', () => {
    expect(parseOpTokenArgs(['--operation', 'model-load', '--model', 'm', '--signer', 'alice', '--signer=bob'], env)).toMatchObject({
      signers: ['alice', 'bob'],
      keyFile: env.VERIFIED_OP_TOKEN_KEY_PATH,
    });
    expect(parseOpTokenArgs(['--operation', 'model-load', '--model', 'm', '--signer', 'a', '--key-file', '/k'], {})).toMatchObject({ keyFile: '/k' });
    expect(parseOpTokenArgs(['--operation', 'model-load', '--model', 'm'], env)).not.toHaveProperty('keyFile');
  });

  it.each([
    [[], '--operation is required'],
    [['--operation', 'model-delete'], '--operation must be one of model-load, model-unload, cache-flush, got "model-delete"'],
    [['--operation', 'model-load'], '--model is required for model-load'],
    [['--operation', 'cache-flush'], '--scope is required for cache-flush'],
    [['--operation', 'cache-flush', '--scope', 'model'], '--model is required with --scope model'],
    [['--operation', 'cache-flush', '--scope', 'tenant'], '--tenant is required with --scope tenant'],
    [['--operation', 'cache-flush', '--scope', 'all', '--model', 'm'], '--model does not go with --scope all'],
    [['--operation', 'model-unload', '--model', 'm', '--scope', 'all'], '--scope, --tenant and --tag go with cache-flush only'],
    [['--operation', 'model-load', '--model', 'm', '--model', 'n'], '--model given more than once'],
    [['--operation', 'model-load', '--model'], '--model needs a value'],
    [['--operation', 'model-load', '--model', 'm', '--replicas', 'two'], '--replicas must be a positive integer, got "two"'],
    [['--operation', 'model-load', '--model', 'm', '--replicas', '0'], 'opToken.replicas: expected an integer of 1-64'],
    [['--operation', 'model-load', '--model', 'm', '--worker', 'w', '--replicas', '2'], '--replicas must be 1 (or absent) with --worker'],
    [['--operation', 'model-unload', '--model', 'm', '--quantization', 'q4'], '--quantization goes with model-load only'],
    [['--operation', 'model-unload', '--model', 'm', '--evict', 'old'], '--evict goes with model-load only'],
    [['--operation', 'model-load', '--model', 'm', '--signer', 'a'], "--signer needs --key (the signer's private key file)"],
    [['--operation', 'model-load', '--model', 'm', '--key', 'k'], '--key signs as one signer: give exactly one --signer'],
    [
      ['--operation', 'model-load', '--model', 'm', '--key', 'k', '--signer', 'a', '--key-file', 'f'],
      '--key (Ed25519) and --key-file (shared HMAC key) do not go together',
    ],
    [['model-load'], 'unexpected argument "model-load"'],
    [
      ['--operation', 'model-load', '--model', 'm'.repeat(256)],
      'the gateway would refuse this token as malformed: opToken.modelId: expected a string of 1-255 characters',
    ],
  ])('%j is refused: %s', (args, message) => {
    expect(() => parseOpTokenArgs(args, {})).toThrow(message);
  });

  it('shared-key format: signs with the key file content (trailing newline removed), issued now', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-op-token-cli-'));
    try {
      const keyFile = join(dir, 'k');
      writeFileSync(keyFile, 'the-key\n');
      const now = Date.UTC(2026, 11, 5, 10, 0, 0, 900);
      const token = decodeOpToken(
        opTokenFor(parseOpTokenArgs(['--operation', 'model-unload', '--model', 'm', '--signer', 'alice', '--signer', 'bob', '--key-file', keyFile], {}), now),
      );
      expect(token.format).toBe('shared-key');
      expect(token.claims).toMatchObject({ operation: 'model-unload', modelId: 'm', issuedAt: Math.floor(now / 1000), signers: ['alice', 'bob'] });
      expect(token.claims.nonce).toMatch(/^[0-9a-f]{32}$/);
      expect(hasValidSignature(Buffer.from('the-key'), token)).toBe(true);
      expect(hasValidSignature(Buffer.from('the-key\n'), token)).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('switchboard op-token keygen, sign, verify (in process)', () => {
  let dir: string;
  const now = Date.UTC(2026, 11, 5, 10, 0, 0);
  const run = (args: string[], stdin = '', nowMs = now, env: Record<string, string> = {}) => {
    const out: string[] = [];
    const err: string[] = [];
    const io: OpTokenIo = { env, out: (t) => out.push(t), err: (t) => err.push(t), readStdin: () => stdin, nowMs };
    const code = runOpToken(args, io);
    return { code, out: out.join(''), err: err.join('') };
  };
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'sb-op-token-cmd-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('keygen writes a 0600 PEM private key, never over an existing file, and prints "name: public key"', () => {
    const file = join(dir, 'alice.key');
    const r = run(['keygen', '--signer', 'alice', '--out', file]);
    expect(r.code).toBe(0);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file, 'utf8')).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);
    const m = /^alice: (\S+)\n$/.exec(r.out);
    expect(parsePublicKey(m![1]).asymmetricKeyType).toBe('ed25519');
    const again = run(['keygen', '--signer', 'alice', '--out', file]);
    expect(again.code).toBe(1);
    expect(again.err).toContain('cannot write the private key');
  });

  it('create, then each signer signs (token as argument or on stdin), then verify: valid with M, and says what it authorises', () => {
    const keys = ['alice', 'bob', 'carol'].map((name) => {
      const r = run(['keygen', '--signer', name, '--out', join(dir, `${name}.key`)]);
      return r.out;
    });
    const signersFile = join(dir, 'signers.yaml');
    writeFileSync(signersFile, keys.join(''));
    const created = run(['--operation', 'model-load', '--model', 'llama3:8b', '--worker', 'w-1', '--gpu-memory-budget-mb', '20000']);
    expect(created.code).toBe(0);
    const unsigned = created.out.trim();
    expect(decodeOpToken(unsigned)).toMatchObject({ format: 'ed25519', signatures: new Map() });

    const byAlice = run(['sign', '--key', join(dir, 'alice.key'), '--signer', 'alice', unsigned]);
    expect(byAlice.err).toContain('alice signs: model-load of \'llama3:8b\', workerId "w-1", gpuMemoryBudgetMB 20000');
    const one = run(['verify', '--signers-file', signersFile], byAlice.out, now + 60_000);
    expect([one.code, one.out]).toEqual([1, expect.stringContaining('INVALID:    1 valid signature(s), 2 needed')]);

    const byBob = run(['sign', '--key', join(dir, 'bob.key'), '--signer', 'bob'], byAlice.out, now + 60_000);
    const token = byBob.out.trim();
    const decoded = decodeOpToken(token);
    if (decoded.format !== 'ed25519') throw new Error('format');
    expect([...decoded.signatures.keys()]).toEqual(['alice', 'bob']);
    const alicePublic = parsePublicKey(keys[0].split(': ')[1]);
    expect(verifyClaims(alicePublic, decoded.signed, decoded.signatures.get('alice')!)).toBe(true);

    const ok = run(['verify', token], '', now + 120_000, { GOVERNANCE_SIGNERS_FILE: signersFile });
    expect(ok.code).toBe(0);
    expect(ok.out).toContain('authorises: model-load of \'llama3:8b\', workerId "w-1", gpuMemoryBudgetMB 20000; nothing else');
    expect(ok.out).toContain('signed by:  alice, bob (2 of 2 required; signers: alice, bob, carol)');
    expect(run(['verify', '--signers-file', signersFile, '--required-signers', '3', token], '', now).code).toBe(1);
    expect(run(['verify', '--signers-file', signersFile, token], '', now + 301_000).out).toContain('INVALID:    expired 1 s ago');

    // carol signing with bob's key: verify names the bad signature.
    const forged = run(['sign', '--key', join(dir, 'bob.key'), '--signer', 'carol', token], '', now).out.trim();
    expect(run(['verify', '--signers-file', signersFile, forged], '', now).out).toContain('signature of carol does not verify');
  });

  it('sign refuses an expired token, a shared-key token, and a key that is not Ed25519', () => {
    run(['keygen', '--signer', 'alice', '--out', join(dir, 'alice.key')]);
    const token = run(['--operation', 'model-unload', '--model', 'm']).out.trim();
    const late = run(['sign', '--key', join(dir, 'alice.key'), '--signer', 'alice', token], '', now + 301_000);
    expect([late.code, late.err]).toEqual([1, expect.stringContaining('outside the ±300 s the gateway accepts')]);
    writeFileSync(join(dir, 'hmac'), 'k');
    const hmac = run(['--operation', 'model-unload', '--model', 'm', '--signer', 'a', '--key-file', join(dir, 'hmac')]).out.trim();
    expect(run(['sign', '--key', join(dir, 'alice.key'), '--signer', 'alice', hmac]).err).toContain('a shared-key (HMAC) token cannot take Ed25519 signatures');
    writeFileSync(join(dir, 'rsa.key'), generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ format: 'pem', type: 'pkcs8' }));
    expect(run(['sign', '--key', join(dir, 'rsa.key'), '--signer', 'alice', token]).err).toContain('holds a rsa key, not an Ed25519 one');
    expect(run(['sign', '--signer', 'alice', token]).code).toBe(2);
  });
});
