import { Env, Reader } from '../config/config-reader';
import { readOpTokenKey } from './op-token-key';

/** The `governance:` section: who may sign lifecycle operations, and with which key (docs/lifecycle.md). */
export interface GovernanceConfig {
  /**
   * `VERIFIED_OP_TOKEN_KEY_PATH`: the file holding the shared HMAC key. Set = model lifecycle
   * enabled (the file must then exist and be non-empty); unset = the lifecycle routes answer
   * `403 lifecycle_disabled`.
   */
  keyPath?: string;
  /** Names that may sign an op token (N). */
  signers: string[];
  /** How many distinct known signers an op token needs (M). */
  requiredSigners: number;
  /** Audit rows older than this are pruned by the cleanup job; 0 = kept forever. */
  auditRetentionMs: number;
  /**
   * Audit rows of requests refused at the admin token check (anyone can send those) older than
   * this are pruned; 0 = kept as long as the others.
   */
  unauthenticatedAuditRetentionMs: number;
}

const KEYS = ['key_path', 'signers', 'required_signers', 'audit_retention_days', 'unauthenticated_audit_retention_days'];
/** Printable ASCII without spaces or commas (GOVERNANCE_SIGNERS is comma-separated). */
const SIGNER_NAME = /^[\x21-\x2b\x2d-\x7e]{1,64}$/;
const DEFAULT_REQUIRED_SIGNERS = 2;
const DAY_MS = 24 * 3600 * 1000;

/** Whether model lifecycle operations are enabled (a key file is configured). */
export function lifecycleEnabled(config: GovernanceConfig): boolean {
  return config.keyPath !== undefined;
}

export function readGovernanceConfig(env: Env, section: unknown, problems: string[]): GovernanceConfig {
  const yaml = section && typeof section === 'object' && !Array.isArray(section) ? (section as Record<string, unknown>) : {};
  if (section !== undefined && section !== null && yaml !== section) problems.push('governance (config file) must be a mapping');
  const r = new Reader(env, yaml, 'governance', KEYS);
  const own: string[] = [];
  const keyPath = r.string('VERIFIED_OP_TOKEN_KEY_PATH', 'key_path') || undefined;
  const signers = readSigners(env.GOVERNANCE_SIGNERS, yaml.signers, own);
  const requiredSigners = r.number('GOVERNANCE_REQUIRED_SIGNERS', 'required_signers', DEFAULT_REQUIRED_SIGNERS, { min: 1, integer: true });
  const auditRetentionDays = r.number('GOVERNANCE_AUDIT_RETENTION_DAYS', 'audit_retention_days', 0, { min: 0 });
  const unauthenticatedDays = r.number('GOVERNANCE_UNAUTHENTICATED_AUDIT_RETENTION_DAYS', 'unauthenticated_audit_retention_days', 30, { min: 0 });
  if (keyPath !== undefined) {
    try {
      readOpTokenKey(keyPath);
    } catch (e) {
      own.push(`VERIFIED_OP_TOKEN_KEY_PATH ${(e as Error).message}`);
    }
    if (signers.length === 0 && !own.some((p) => p.startsWith('governance.signers') || p.startsWith('GOVERNANCE_SIGNERS'))) {
      own.push('GOVERNANCE_SIGNERS (or governance.signers in the config file) must name the signers when VERIFIED_OP_TOKEN_KEY_PATH is set');
    }
  }
  if (signers.length > 0 && requiredSigners > signers.length && !r.problems.length) {
    own.push(`GOVERNANCE_REQUIRED_SIGNERS (${requiredSigners}) must not exceed the number of signers (${signers.length}: ${signers.join(', ')})`);
  }
  for (const key of r.unknownKeys()) problems.push(`governance.${key} (config file) is not a governance setting (known: ${KEYS.join(', ')})`);
  problems.push(...r.problems, ...own);
  return {
    ...(keyPath !== undefined ? { keyPath } : {}),
    signers,
    requiredSigners,
    auditRetentionMs: Math.round(auditRetentionDays * DAY_MS),
    unauthenticatedAuditRetentionMs: Math.round(unauthenticatedDays * DAY_MS),
  };
}

/** `GOVERNANCE_SIGNERS=alice,bob,carol` (wins) or the file's `governance.signers: [alice, bob]`. */
function readSigners(fromEnv: string | undefined, fromFile: unknown, problems: string[]): string[] {
  let names: string[];
  let source: string;
  if (fromEnv !== undefined && fromEnv !== '') {
    names = fromEnv.split(',').map((s) => s.trim()).filter(Boolean);
    source = 'GOVERNANCE_SIGNERS';
  } else if (fromFile !== undefined && fromFile !== null) {
    source = 'governance.signers (config file)';
    if (!Array.isArray(fromFile) || !fromFile.every((s) => typeof s === 'string')) {
      problems.push(`${source} must be a list of names`);
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
