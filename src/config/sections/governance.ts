import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { Env, Reader } from '../../common/config-reader';
import { parsePublicKey, publicKeyText } from '../../governance/op-token-ed25519';
import { readOpTokenKey } from '../../governance/op-token-key';

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

const KEYS = ['key_path', 'signers', 'required_signers', 'shared_key_compat', 'audit_retention_days', 'unauthenticated_audit_retention_days'];
/** Printable ASCII without spaces or commas (GOVERNANCE_SIGNERS is comma-separated). */
const SIGNER_NAME = /^[\x21-\x2b\x2d-\x7e]{1,64}$/;
const DEFAULT_REQUIRED_SIGNERS = 2;
const DAY_MS = 24 * 3600 * 1000;

/** Whether model lifecycle operations are enabled: signers' public keys, or the shared key with compat on. */
export function lifecycleEnabled(config: GovernanceConfig): boolean {
  return Object.keys(config.signerKeys).length > 0 || (config.sharedKeyCompat && config.keyPath !== undefined);
}

export function readGovernanceConfig(env: Env, section: unknown, problems: string[]): GovernanceConfig {
  const yaml = section && typeof section === 'object' && !Array.isArray(section) ? (section as Record<string, unknown>) : {};
  if (section !== undefined && section !== null && yaml !== section) problems.push('governance (config file) must be a mapping');
  const r = new Reader(env, yaml, 'governance', KEYS);
  const own: string[] = [];
  const keyPath = r.string('VERIFIED_OP_TOKEN_KEY_PATH', 'key_path') || undefined;
  const sharedKeyCompat = r.bool('GOVERNANCE_SHARED_KEY_COMPAT', 'shared_key_compat', false);
  const signersFile = env.GOVERNANCE_SIGNERS_FILE || undefined;
  const fileMap = yaml.signers !== null && typeof yaml.signers === 'object' && !Array.isArray(yaml.signers);
  const signerKeys = signersFile !== undefined ? readKeysFile(signersFile, own) : fileMap ? readKeys(yaml.signers, 'governance.signers (config file)', own) : {};
  const keyed = Object.keys(signerKeys);
  let signers = keyed;
  if (keyed.length > 0 || signersFile !== undefined) {
    if (env.GOVERNANCE_SIGNERS) own.push('GOVERNANCE_SIGNERS names the signers of shared-key tokens; with public keys configured the signers are the keys\' names: unset it');
  } else signers = readNames(env.GOVERNANCE_SIGNERS, fileMap ? undefined : yaml.signers, own);
  const requiredSigners = r.number('GOVERNANCE_REQUIRED_SIGNERS', 'required_signers', DEFAULT_REQUIRED_SIGNERS, { min: 1, integer: true });
  const auditRetentionDays = r.number('GOVERNANCE_AUDIT_RETENTION_DAYS', 'audit_retention_days', 0, { min: 0 });
  const unauthenticatedDays = r.number('GOVERNANCE_UNAUTHENTICATED_AUDIT_RETENTION_DAYS', 'unauthenticated_audit_retention_days', 30, { min: 0 });
  if (keyPath !== undefined && !sharedKeyCompat) {
    // Fail loudly rather than silently drop the operator's governance: the shared key is one authority, not M of N.
    own.push(
      'VERIFIED_OP_TOKEN_KEY_PATH is set but shared-key (HMAC) op tokens are off: whoever holds that key can sign as every signer. Configure the signers\' public keys (governance.signers: {name: key} or GOVERNANCE_SIGNERS_FILE; `switchboard op-token keygen`), or set GOVERNANCE_SHARED_KEY_COMPAT=true to keep accepting it',
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
  if (Object.keys(keys).length === 0 && !problems.some((p) => p.startsWith(`GOVERNANCE_SIGNERS_FILE "${path}"`))) problems.push(`GOVERNANCE_SIGNERS_FILE "${path}" names no signer`);
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
    names = fromEnv.split(',').map((s) => s.trim()).filter(Boolean);
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
