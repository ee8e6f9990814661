import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '..';
import { lifecycleEnabled, readGovernanceConfig } from './governance';
import { generateKeyPairSync } from 'node:crypto';
import { publicKeyText } from '../../governance/op-token-ed25519';
import { keyFilePermissionWarning, readOpTokenKey } from '../../common/op-token-key';

const pub = () => publicKeyText(generateKeyPairSync('ed25519').publicKey);

const DAY_MS = 24 * 3600_000;

describe('governance configuration', () => {
  let dir: string;
  let keyFile: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'sb-governance-'));
    keyFile = join(dir, 'model-api.key');
    writeFileSync(keyFile, 'shared-hmac-key\n', { mode: 0o600 });
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const problemsOf = (env: Record<string, string>, section?: unknown) => {
    const problems: string[] = [];
    const config = readGovernanceConfig(env, section, problems);
    return { config, problems };
  };

  it('defaults: lifecycle disabled, no signers, 2 required', () => {
    const governance = loadConfig({}).governance;
    expect(governance).toEqual({
      signerKeys: {},
      signers: [],
      requiredSigners: 2,
      sharedKeyCompat: false,
      auditRetentionMs: 0,
      unauthenticatedAuditRetentionMs: 30 * DAY_MS,
    });
    expect(lifecycleEnabled(governance)).toBe(false);
  });

  it('public keys in governance.signers enable the lifecycle; the signers are their names', () => {
    const keys = { alice: pub(), bob: pub(), carol: pub() };
    const file = join(dir, 'sb.yaml');
    writeFileSync(
      file,
      `governance:\n  signers:\n${Object.entries(keys)
        .map(([n, k]) => `    ${n}: ${k}\n`)
        .join('')}  required_signers: 3\n`,
    );
    const governance = loadConfig({ CONFIG_FILE: file }).governance;
    expect(governance).toMatchObject({ signerKeys: keys, signers: ['alice', 'bob', 'carol'], requiredSigners: 3, sharedKeyCompat: false });
    expect(lifecycleEnabled(governance)).toBe(true);
    expect(loadConfig({ CONFIG_FILE: file, GOVERNANCE_REQUIRED_SIGNERS: '1' }).governance.requiredSigners).toBe(1);
  });

  it('GOVERNANCE_SIGNERS_FILE: a YAML or JSON map of names to keys (raw or SPKI DER base64), winning over the config file', () => {
    const alice = generateKeyPairSync('ed25519').publicKey;
    const bob = pub();
    const yamlFile = join(dir, 'signers.yaml');
    writeFileSync(yamlFile, `alice: ${alice.export({ format: 'der', type: 'spki' }).toString('base64')}\nbob: ${bob}\n`);
    const jsonFile = join(dir, 'signers.json');
    writeFileSync(jsonFile, JSON.stringify({ alice: publicKeyText(alice), bob }));
    for (const file of [yamlFile, jsonFile]) {
      const { config, problems } = problemsOf({ GOVERNANCE_SIGNERS_FILE: file }, { signers: { carol: pub() } });
      expect(problems).toEqual([]);
      expect(config).toMatchObject({ signersFile: file, signerKeys: { alice: publicKeyText(alice), bob }, signers: ['alice', 'bob'] });
    }
  });

  it('the shared HMAC key is accepted only with GOVERNANCE_SHARED_KEY_COMPAT (single authority), with its list of names', () => {
    expect(problemsOf({ VERIFIED_OP_TOKEN_KEY_PATH: keyFile, GOVERNANCE_SIGNERS: 'alice,bob' }).problems).toEqual([
      expect.stringContaining('VERIFIED_OP_TOKEN_KEY_PATH is set but shared-key (HMAC) op tokens are off'),
    ]);
    const { config, problems } = problemsOf({
      VERIFIED_OP_TOKEN_KEY_PATH: keyFile,
      GOVERNANCE_SHARED_KEY_COMPAT: 'true',
      GOVERNANCE_SIGNERS: ' alice, bob ,carol',
      GOVERNANCE_REQUIRED_SIGNERS: '2',
    });
    expect(problems).toEqual([]);
    expect(config).toMatchObject({ keyPath: keyFile, sharedKeyCompat: true, signers: ['alice', 'bob', 'carol'], signerKeys: {}, requiredSigners: 2 });
    expect(lifecycleEnabled(config)).toBe(true);
    expect(problemsOf({}, { shared_key_compat: true, key_path: keyFile, signers: ['dave', 'erin'] }).config).toMatchObject({
      sharedKeyCompat: true,
      signers: ['dave', 'erin'],
    });
    expect(problemsOf({ GOVERNANCE_SHARED_KEY_COMPAT: 'true' }).problems).toEqual([
      'GOVERNANCE_SHARED_KEY_COMPAT needs VERIFIED_OP_TOKEN_KEY_PATH (the shared HMAC key file)',
    ]);
  });

  it.each([
    ['a key that is not Ed25519', () => ({ alice: Buffer.alloc(31).toString('base64') }), 'governance.signers (config file).alice: not an Ed25519 public key'],
    [
      'one key under two names (one person would count twice)',
      () => {
        const k = pub();
        return { alice: k, alice2: k };
      },
      'alice and alice2 have the same public key',
    ],
    ['a bad name', () => ({ 'a b': pub() }), '"a b" is not a signer name'],
  ])('refuses %s', (_what, keys, message) => {
    expect(problemsOf({}, { signers: keys() }).problems).toEqual([expect.stringContaining(message)]);
  });

  it('GOVERNANCE_SIGNERS_FILE that cannot be read or names nobody stops the boot', () => {
    expect(problemsOf({ GOVERNANCE_SIGNERS_FILE: join(dir, 'none.yaml') }).problems).toEqual([expect.stringContaining('cannot be read')]);
    writeFileSync(join(dir, 'empty.yaml'), '{}\n');
    expect(problemsOf({ GOVERNANCE_SIGNERS_FILE: join(dir, 'empty.yaml') }).problems).toEqual([expect.stringContaining('names no signer')]);
    expect(problemsOf({ GOVERNANCE_SIGNERS_FILE: join(dir, 'empty.yaml'), GOVERNANCE_SIGNERS: 'a,b' }).problems).toContain(
      "GOVERNANCE_SIGNERS names the signers of shared-key tokens; with public keys configured the signers are the keys' names: unset it",
    );
  });

  it.each([
    [
      { VERIFIED_OP_TOKEN_KEY_PATH: '/nonexistent/model-api.key', GOVERNANCE_SHARED_KEY_COMPAT: 'true', GOVERNANCE_SIGNERS: 'a,b' },
      'VERIFIED_OP_TOKEN_KEY_PATH "/nonexistent/model-api.key" cannot be read',
    ],
    [{ GOVERNANCE_SIGNERS: 'a,b', GOVERNANCE_REQUIRED_SIGNERS: '3' }, 'GOVERNANCE_REQUIRED_SIGNERS (3) must not exceed the number of signers (2: a, b)'],
    [{ GOVERNANCE_REQUIRED_SIGNERS: '0' }, 'GOVERNANCE_REQUIRED_SIGNERS must be an integer >= 1, got "0"'],
    [{ GOVERNANCE_REQUIRED_SIGNERS: 'two' }, 'GOVERNANCE_REQUIRED_SIGNERS must be an integer >= 1, got "two"'],
    [{ GOVERNANCE_SIGNERS: 'alice,bob,alice' }, 'GOVERNANCE_SIGNERS: "alice" is listed twice'],
    [{ GOVERNANCE_SIGNERS: 'alice,b o b' }, 'GOVERNANCE_SIGNERS: "b o b" is not a signer name'],
  ])('%j stops the boot naming the problem', (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });

  it('shared-key compat needs signers, and a key file that is not empty', () => {
    expect(problemsOf({ VERIFIED_OP_TOKEN_KEY_PATH: keyFile, GOVERNANCE_SHARED_KEY_COMPAT: 'true' }).problems).toEqual([
      'GOVERNANCE_SIGNERS (or governance.signers in the config file) must name the signers when VERIFIED_OP_TOKEN_KEY_PATH is set',
    ]);
    writeFileSync(keyFile, '\n');
    expect(problemsOf({ VERIFIED_OP_TOKEN_KEY_PATH: keyFile, GOVERNANCE_SHARED_KEY_COMPAT: 'true', GOVERNANCE_SIGNERS: 'a,b' }).problems).toEqual([
      `VERIFIED_OP_TOKEN_KEY_PATH "${keyFile}" is empty: it must hold the shared HMAC key`,
    ]);
  });

  it('reads the audit retentions (days, fractions allowed, 0 = none) from the environment or the config file', () => {
    expect(problemsOf({ GOVERNANCE_AUDIT_RETENTION_DAYS: '365', GOVERNANCE_UNAUTHENTICATED_AUDIT_RETENTION_DAYS: '0.5' }).config).toMatchObject({
      auditRetentionMs: 365 * DAY_MS,
      unauthenticatedAuditRetentionMs: DAY_MS / 2,
    });
    expect(problemsOf({}, { audit_retention_days: 90, unauthenticated_audit_retention_days: 0 }).config).toMatchObject({
      auditRetentionMs: 90 * DAY_MS,
      unauthenticatedAuditRetentionMs: 0,
    });
    expect(problemsOf({ GOVERNANCE_AUDIT_RETENTION_DAYS: '-1' }).problems).toEqual(['GOVERNANCE_AUDIT_RETENTION_DAYS must be a number >= 0, got "-1"']);
    expect(problemsOf({ GOVERNANCE_UNAUTHENTICATED_AUDIT_RETENTION_DAYS: 'month' }).problems).toHaveLength(1);
  });

  it('rejects unknown keys and a section that is not a mapping', () => {
    expect(problemsOf({}, { signers: ['a', 'b'], quorum: 2 }).problems).toEqual([
      'governance.quorum (config file) is not a governance setting (known: key_path, signers, required_signers, shared_key_compat, audit_retention_days, unauthenticated_audit_retention_days)',
    ]);
    expect(problemsOf({}, ['a']).problems).toEqual(['governance (config file) must be a mapping']);
    expect(problemsOf({}, { signers: 'alice' }).problems).toEqual([
      'governance.signers (config file) must be a mapping of signer name to public key (or, for shared-key tokens, a list of names)',
    ]);
  });
});

describe('the governance key file', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'sb-key-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('is the content with one trailing newline removed (LF or CRLF), nothing else', () => {
    const file = join(dir, 'k');
    for (const [content, key] of [
      ['secret\n', 'secret'],
      ['secret\r\n', 'secret'],
      ['secret', 'secret'],
      [' secret \n\n', ' secret \n'],
    ]) {
      writeFileSync(file, content);
      expect(readOpTokenKey(file).toString()).toBe(key);
    }
  });

  it('warns when group or others may read it, not when only its owner may', () => {
    const file = join(dir, 'k');
    writeFileSync(file, 'secret\n');
    chmodSync(file, 0o600);
    expect(keyFilePermissionWarning(file)).toBeUndefined();
    chmodSync(file, 0o640);
    expect(keyFilePermissionWarning(file)).toContain('readable by its group (mode 0640)');
    chmodSync(file, 0o644);
    expect(keyFilePermissionWarning(file)).toContain('readable by every user (mode 0644)');
  });
});
