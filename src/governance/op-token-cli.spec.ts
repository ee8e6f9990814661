import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeOpToken, hasValidSignature } from './op-token';
import { opTokenFor, parseOpTokenArgs } from './op-token-cli';

describe('switchboard op-token arguments', () => {
  const env = { VERIFIED_OP_TOKEN_KEY_PATH: '/etc/switchboard/model-api.key' };

  it('takes --name value and --name=value, repeated signers, and the key path from the environment', () => {
    expect(parseOpTokenArgs(['--operation', 'model-load', '--model=llama3:8b', '--signer', 'alice', '--signer=bob'], env)).toEqual({
      operation: 'model-load',
      model: 'llama3:8b',
      signers: ['alice', 'bob'],
      keyFile: '/etc/switchboard/model-api.key',
    });
    expect(parseOpTokenArgs(['--operation', 'cache-flush', '--scope', 'tenant', '--tenant', 't1', '--signer', 'a', '--key-file', '/k'], {})).toMatchObject({
      scope: 'tenant',
      tenant: 't1',
      keyFile: '/k',
    });
  });

  it.each([
    [[], '--operation is required'],
    [['--operation', 'model-delete'], '--operation must be one of model-load, model-unload, cache-flush, got "model-delete"'],
    [['--operation', 'model-load', '--signer', 'a'], '--model is required for model-load'],
    [['--operation', 'model-load', '--model', 'm'], 'at least one --signer is required'],
    [['--operation', 'cache-flush', '--signer', 'a'], '--scope is required for cache-flush'],
    [['--operation', 'cache-flush', '--scope', 'model', '--signer', 'a'], '--model is required with --scope model'],
    [['--operation', 'cache-flush', '--scope', 'all', '--model', 'm', '--signer', 'a'], '--model does not go with --scope all'],
    [['--operation', 'model-unload', '--model', 'm', '--scope', 'all', '--signer', 'a'], '--scope, --tenant and --tag go with cache-flush only'],
    [['--operation', 'model-load', '--model', 'm', '--model', 'n', '--signer', 'a'], '--model given more than once'],
    [['--operation', 'model-load', '--model'], '--model needs a value'],
    [['--operation', 'model-load', '--key', 'k'], 'unknown option --key'],
    [['model-load'], 'unexpected argument "model-load"'],
    [['--operation', 'model-unload', '--model', 'm', '--evict', 'old', '--signer', 'a'], '--evict goes with model-load only'],
    [['--operation', 'model-load', '--model', 'm', '--signer', 'al ice'], 'the gateway would refuse this token as malformed: opToken.signers: expected 1-64 names of 1-64 printable characters'],
    [['--operation', 'model-load', '--model', 'm'.repeat(256), '--signer', 'a'], 'the gateway would refuse this token as malformed: opToken.modelId: expected a string of 1-255 characters'],
  ])('%j is refused: %s', (args, message) => {
    expect(() => parseOpTokenArgs(args, env)).toThrow(message);
  });

  it('needs a key file', () => {
    expect(() => parseOpTokenArgs(['--operation', 'model-load', '--model', 'm', '--signer', 'a'], {})).toThrow('pass --key-file or set VERIFIED_OP_TOKEN_KEY_PATH');
  });

  it('signs with the key file content (trailing newline removed), issued now', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-op-token-cli-'));
    try {
      const keyFile = join(dir, 'k');
      writeFileSync(keyFile, 'the-key\n');
      const now = Date.UTC(2026, 11, 5, 10, 0, 0, 900);
      const token = decodeOpToken(opTokenFor(parseOpTokenArgs(['--operation', 'model-unload', '--model', 'm', '--signer', 'alice', '--signer', 'bob', '--key-file', keyFile], {}), now));
      expect(token.claims).toMatchObject({ operation: 'model-unload', modelId: 'm', issuedAt: Math.floor(now / 1000), signers: ['alice', 'bob'] });
      expect(token.claims.nonce).toMatch(/^[0-9a-f]{32}$/);
      expect(hasValidSignature(Buffer.from('the-key'), token)).toBe(true);
      expect(hasValidSignature(Buffer.from('the-key\n'), token)).toBe(false);
      const evicting = decodeOpToken(opTokenFor(parseOpTokenArgs(['--operation', 'model-load', '--model', 'm', '--evict', 'old', '--signer', 'alice', '--key-file', keyFile], {}), now));
      expect(evicting.claims).toMatchObject({ operation: 'model-load', modelId: 'm', evictModel: 'old' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
