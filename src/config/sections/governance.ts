import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { Env, Reader } from '../../common/config-reader';
import { bool, custom, group, num, read, str, yamlKeys } from '../setting';
import { parsePublicKey, publicKeyText } from '../../common/ed25519-public-key';
import { readOpTokenKey } from '../../common/op-token-key';

/** The `governance:` section: who may sign lifecycle operations, and with which keys (docs/lifecycle.md). */
export interface GovernanceConfig {
  /**
   * Signer name → Ed25519 public key (base64 of the raw 32 bytes, normalized), from
   * `GOVERNANCE_SIGNERS_FILE` or the `governance.signers` mapping. Any = model lifecycle enabled.
   */
  signerKeys: Record<string, string>;
  /** `GOVERNANCE_SIGNERS_FILE`, when the keys came from a file. */
  signersFile?: string;
  /** Names that may sign (N): the keys' names, or (shared-key compat only) the `GOVERNANCE_SIGNERS` list. */
  signers: string[];
  /** How many distinct valid signatures of known signers an op token needs (M). */
  requiredSigners: number;
  /**
   * `GOVERNANCE_SHARED_KEY_COMPAT`: also accept the seed's single shared-HMAC token format, keyed
   * with the file at `VERIFIED_OP_TOKEN_KEY_PATH` (`keyPath`). Single authority: whoever holds
   * that key can sign as anyone. Off unless set.
   */
  sharedKeyCompat: boolean;
  keyPath?: string;
  /** Audit rows older than this are pruned by the cleanup job; 0 = kept forever. */
  auditRetentionMs: number;
  /**
   * Audit rows of requests refused at the admin token check (anyone can send those) older than
   * this are pruned; 0 = kept as long as the others.
   */
  unauthenticatedAuditRetentionMs: number;
}

/** Printable ASCII without spaces or commas (GOVERNANCE_SIGNERS is comma-separated). */
const SIGNER_NAME = /^[\x21-\x2b\x2d-\x7e]{1,64}$/;
const DEFAULT_REQUIRED_SIGNERS = 2;
const DAY_MS = 24 * 3600 * 1000;

/** Whether model lifecycle operations are enabled: signers' public keys, or the shared key with compat on. */
export function lifecycleEnabled(config: GovernanceConfig): boolean {
  return Object.keys(config.signerKeys).length > 0 || (config.sharedKeyCompat && config.keyPath !== undefined);
}

export const GOVERNANCE_SETTINGS = group('governance', 'governance', {
  keyPath: str({
    env: 'VERIFIED_OP_TOKEN_KEY_PATH',
    yaml: 'key_path',
    reload: 'restart',
    fields: ['keyPath'],
    doc: 'compat only: file with the shared HMAC key (one trailing newline removed; must exist and not be empty; warned about when readable by group or others). Set without `GOVERNANCE_SHARED_KEY_COMPAT=true`, the boot stops',
  }),
  signers: custom({
    yaml: 'signers',
    reload: 'restart',
    fields: ['signerKeys', 'signers', 'signersFile'],
    docDefault: 'none',
    doc: "the signers' public keys inline: `{alice: <base64 public key>, bob: …}` (`GOVERNANCE_SIGNERS_FILE` wins). A list of names (`[alice, bob]`, or `GOVERNANCE_SIGNERS=alice,bob`) only names the signers of shared-key tokens (compat below)",
  }),
  signersFile: custom({
    env: 'GOVERNANCE_SIGNERS_FILE',
    reload: 'restart',
    fields: [],
    docDefault: 'none',
    doc: "YAML or JSON file mapping each governance signer's name to their Ed25519 **public** key (base64 of the raw 32 bytes as `switchboard op-token keygen` prints it, or base64 SPKI DER); wins over YAML `governance.signers`. Signers' public keys configured = [model lifecycle](lifecycle.md) on. A bad key, one key under two names or an unreadable file stops the boot",
  }),
  signerNames: custom({
    env: 'GOVERNANCE_SIGNERS',
    reload: 'restart',
    fields: [],
    docDefault: 'none',
    doc: 'compat only: comma-separated names of the signers (N) a shared-key token may list (in the file: `governance.signers` as a list); refused beside public keys',
  }),
  requiredSigners: num({
    env: 'GOVERNANCE_REQUIRED_SIGNERS',
    yaml: 'required_signers',
    default: DEFAULT_REQUIRED_SIGNERS,
    opts: { min: 1, integer: true },
    reload: 'restart',
    fields: ['requiredSigners'],
    docDefault: '`2`',
    doc: 'distinct valid signatures of configured signers (M) an op token needs; at most the number of signers (N)',
  }),
  sharedKeyCompat: bool({
    env: 'GOVERNANCE_SHARED_KEY_COMPAT',
    yaml: 'shared_key_compat',
    default: false,
    reload: 'restart',
    fields: ['sharedKeyCompat'],
    doc: "also accept the seed's shared-HMAC token format, keyed with `VERIFIED_OP_TOKEN_KEY_PATH`: a **single authority** (whoever holds the key signs as every signer); warned about at boot",
  }),
  auditRetentionDays: num({
    env: 'GOVERNANCE_AUDIT_RETENTION_DAYS',
    yaml: 'audit_retention_days',
    default: 0,
    opts: { min: 0 },
    reload: 'restart',
    fields: ['auditRetentionMs'],
    doc: '[lifecycle audit](lifecycle.md#audit) rows older than this are deleted by the cleanup job; fractions allowed; `0` = keep forever',
  }),
  unauthenticatedAuditRetentionDays: num({
    env: 'GOVERNANCE_UNAUTHENTICATED_AUDIT_RETENTION_DAYS',
    yaml: 'unauthenticated_audit_retention_days',
    default: 30,
    opts: { min: 0 },
    reload: 'restart',
    fields: ['unauthenticatedAuditRetentionMs'],
    doc: 'audit rows of lifecycle requests refused for want of the admin token are deleted after this; `0` = kept like the others',
  }),
});
const S = GOVERNANCE_SETTINGS.settings;
const KEYS = yamlKeys(GOVERNANCE_SETTINGS);

export function readGovernanceConfig(env: Env, section: unknown, problems: string[]): GovernanceConfig {
  const yaml = section && typeof section === 'object' && !Array.isArray(section) ? (section as Record<string, unknown>) : {};
  if (section !== undefined && section !== null && yaml !== section) problems.push('governance (config file) must be a mapping');
  const r = new Reader(env, yaml, 'governance', KEYS);
  const own: string[] = [];
  const keyPath = read(r, env, S.keyPath) || undefined;
  const sharedKeyCompat = read(r, env, S.sharedKeyCompat);
  const signersFile = env[S.signersFile.env!] || undefined;
  const fileMap = yaml.signers !== null && typeof yaml.signers === 'object' && !Array.isArray(yaml.signers);
  const signerKeys =
    signersFile !== undefined ? readKeysFile(signersFile, own) : fileMap ? readKeys(yaml.signers, 'governance.signers (config file)', own) : {};
  const keyed = Object.keys(signerKeys);
  let signers = keyed;
  if (keyed.length > 0 || signersFile !== undefined) {
    if (env[S.signerNames.env!])
      own.push("GOVERNANCE_SIGNERS names the signers of shared-key tokens; with public keys configured the signers are the keys' names: unset it");
  } else signers = readNames(env[S.signerNames.env!], fileMap ? undefined : yaml.signers, own);
  const requiredSigners = read(r, env, S.requiredSigners);
  const auditRetentionDays = read(r, env, S.auditRetentionDays);
  const unauthenticatedDays = read(r, env, S.unauthenticatedAuditRetentionDays);
  if (keyPath !== undefined && !sharedKeyCompat) {
    // Fail loudly rather than silently drop the operator's governance: the shared key is one authority, not M of N.
    own.push(
      "VERIFIED_OP_TOKEN_KEY_PATH is set but shared-key (HMAC) op tokens are off: whoever holds that key can sign as every signer. Configure the signers' public keys (governance.signers: {name: key} or GOVERNANCE_SIGNERS_FILE; `switchboard op-token keygen`), or set GOVERNANCE_SHARED_KEY_COMPAT=true to keep accepting it",
    );
  }
  if (sharedKeyCompat && keyPath === undefined) own.push('GOVERNANCE_SHARED_KEY_COMPAT needs VERIFIED_OP_TOKEN_KEY_PATH (the shared HMAC key file)');
  if (sharedKeyCompat && keyPath !== undefined) {
    try {
      readOpTokenKey(keyPath);
    } catch (e) {
      own.push(`VERIFIED_OP_TOKEN_KEY_PATH ${(e as Error).message}`);
    }
    if (signers.length === 0 && !own.some((p) => p.includes('governance.signers') || p.includes('GOVERNANCE_SIGNERS'))) {
      own.push('GOVERNANCE_SIGNERS (or governance.signers in the config file) must name the signers when VERIFIED_OP_TOKEN_KEY_PATH is set');
    }
  }
  if (signers.length > 0 && requiredSigners > signers.length && !r.problems.length) {
    own.push(`GOVERNANCE_REQUIRED_SIGNERS (${requiredSigners}) must not exceed the number of signers (${signers.length}: ${signers.join(', ')})`);
  }
  for (const key of r.unknownKeys()) problems.push(`governance.${key} (config file) is not a governance setting (known: ${KEYS.join(', ')})`);
  problems.push(...r.problems, ...own);
  return {
    signerKeys,
    ...(signersFile !== undefined ? { signersFile } : {}),
    signers,
    requiredSigners,
    sharedKeyCompat,
    ...(keyPath !== undefined ? { keyPath } : {}),
    auditRetentionMs: Math.round(auditRetentionDays * DAY_MS),
    unauthenticatedAuditRetentionMs: Math.round(unauthenticatedDays * DAY_MS),
  };
}

/** `GOVERNANCE_SIGNERS_FILE`: a YAML or JSON mapping of signer name to public key (JSON is YAML). */
function readKeysFile(path: string, problems: string[]): Record<string, string> {
  let parsed: unknown;
  try {
    parsed = parseYaml(readFileSync(path, 'utf8'));
  } catch (e) {
    problems.push(`GOVERNANCE_SIGNERS_FILE "${path}" cannot be read: ${(e as Error).message.split('\n')[0]}`);
    return {};
  }
  const keys = readKeys(parsed, `GOVERNANCE_SIGNERS_FILE "${path}"`, problems);
  if (Object.keys(keys).length === 0 && !problems.some((p) => p.startsWith(`GOVERNANCE_SIGNERS_FILE "${path}"`)))
    problems.push(`GOVERNANCE_SIGNERS_FILE "${path}" names no signer`);
  return keys;
}

/** `{alice: <base64 public key>, ...}`: each a valid Ed25519 key, no key under two names (one person would count twice). */
function readKeys(v: unknown, source: string, problems: string[]): Record<string, string> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) {
    problems.push(`${source} must be a mapping of signer name to public key`);
    return {};
  }
  const out: Record<string, string> = {};
  const owner = new Map<string, string>();
  const before = problems.length;
  for (const [name, key] of Object.entries(v as Record<string, unknown>)) {
    if (!SIGNER_NAME.test(name)) {
      problems.push(`${source}: "${name.slice(0, 80)}" is not a signer name (1-64 printable characters, no spaces or commas)`);
      continue;
    }
    if (typeof key !== 'string') {
      problems.push(`${source}.${name}: expected a base64 Ed25519 public key`);
      continue;
    }
    let text: string;
    try {
      text = publicKeyText(parsePublicKey(key));
    } catch (e) {
      problems.push(`${source}.${name}: not an Ed25519 public key (${(e as Error).message})`);
      continue;
    }
    if (owner.has(text)) problems.push(`${source}: ${owner.get(text)} and ${name} have the same public key (one key would count twice)`);
    owner.set(text, name);
    out[name] = text;
  }
  return problems.length > before ? {} : out;
}

/** Shared-key compat: `GOVERNANCE_SIGNERS=alice,bob,carol` (wins) or the file's `governance.signers: [alice, bob]`. */
function readNames(fromEnv: string | undefined, fromFile: unknown, problems: string[]): string[] {
  let names: string[];
  let source: string;
  if (fromEnv !== undefined && fromEnv !== '') {
    names = fromEnv
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    source = 'GOVERNANCE_SIGNERS';
  } else if (fromFile !== undefined && fromFile !== null) {
    source = 'governance.signers (config file)';
    if (!Array.isArray(fromFile) || !fromFile.every((s) => typeof s === 'string')) {
      problems.push(`${source} must be a mapping of signer name to public key (or, for shared-key tokens, a list of names)`);
      return [];
    }
    names = fromFile.map((s) => s.trim());
  } else return [];
  const bad = names.filter((n) => !SIGNER_NAME.test(n));
  if (bad.length) problems.push(`${source}: "${bad[0].slice(0, 80)}" is not a signer name (1-64 printable characters, no spaces or commas)`);
  const twice = names.filter((n, i) => names.indexOf(n) !== i);
  if (twice.length) problems.push(`${source}: "${twice[0]}" is listed twice`);
  return bad.length || twice.length ? [] : names;
}
