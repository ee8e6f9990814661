import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { canonicalJson } from '../common/canonical-json';

/** The governed operations a `verifiedOpToken` may authorize (runner API names). */
export const LIFECYCLE_OPERATIONS = ['model-load', 'model-unload', 'cache-flush'] as const;
export type LifecycleOperation = (typeof LIFECYCLE_OPERATIONS)[number];

/**
 * Everything an operation does that a token binds: the request must carry exactly these values
 * (a field absent from the token must be absent from the request, and the other way round).
 */
export const BOUND_FIELDS = [
  'operation',
  'modelId',
  'evictModel',
  'pool',
  'workerId',
  'replicas',
  'quantization',
  'gpuMemoryBudgetMB',
  'maxContextLength',
  'scope',
  'tenantId',
  'tag',
] as const;
export type BoundField = (typeof BOUND_FIELDS)[number];

/** What a request asks for, in the bound fields: the token must have been signed for exactly this. */
export interface BoundClaims {
  operation: LifecycleOperation;
  modelId?: string;
  /** model-load: the model the load evicts first. */
  evictModel?: string;
  pool?: string;
  workerId?: string;
  replicas?: number;
  quantization?: string;
  gpuMemoryBudgetMB?: number;
  maxContextLength?: number;
  /** cache-flush only (required there). */
  scope?: string;
  tenantId?: string;
  tag?: string;
}

/** What a token's signers signed off: the bound fields, when, a one-use nonce, and who. */
export interface OpTokenClaims extends BoundClaims {
  /** Unix seconds. */
  issuedAt: number;
  /** The signers the token names (Ed25519: the names of its signatures; shared key: its `signers`). */
  signers: string[];
  nonce: string;
}

/**
 * A token as it decodes, before anything about it is trusted. `ed25519`: one signature per signer
 * over the canonical claims; `shared-key`: the seed's single HMAC over claims naming the signers.
 */
export type DecodedOpToken =
  | { format: 'ed25519'; claims: OpTokenClaims; signed: Record<string, unknown>; signatures: Map<string, Buffer> }
  | { format: 'shared-key'; claims: OpTokenClaims; signed: Record<string, unknown>; signature: Buffer };

/** The token is not a well-formed `verifiedOpToken`; `message` says what is wrong. */
export class MalformedOpToken extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MalformedOpToken';
  }
}

export const MAX_OP_TOKEN_LENGTH = 16384;
export const MAX_SIGNERS = 64;
const STRING_FIELDS = ['modelId', 'evictModel', 'pool', 'workerId', 'quantization', 'scope', 'tenantId', 'tag'] as const;
const INTEGER_FIELDS = { replicas: 64, gpuMemoryBudgetMB: 100_000_000, maxContextLength: 100_000_000 } as const;
const ED25519_FIELDS = new Set<string>([...BOUND_FIELDS, 'issuedAt', 'nonce']);
const SHARED_KEY_FIELDS = new Set<string>([...ED25519_FIELDS, 'signers']);
const BASE64URL = /^[A-Za-z0-9_-]+={0,2}$/;
const HEX_SHA256 = /^[0-9a-fA-F]{64}$/;
const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
/** Printable ASCII without spaces: what a nonce may be made of. */
const NONCE = /^[\x21-\x7e]{8,128}$/;
export const SIGNER_NAME = /^[\x21-\x7e]{1,64}$/;

/** HMAC-SHA256 of the canonical JSON of `opToken`, keyed with the shared governance key. */
export function signOpToken(key: Buffer, opToken: Record<string, unknown>): Buffer {
  return createHmac('sha256', key).update(canonicalJson(opToken), 'utf8').digest();
}

/** Whether a shared-key token's `signature` is the HMAC of its `opToken` under `key` (constant-time comparison). */
export function hasValidSignature(key: Buffer, token: DecodedOpToken): boolean {
  if (token.format !== 'shared-key') return false;
  const expected = signOpToken(key, token.signed);
  return expected.length === token.signature.length && timingSafeEqual(expected, token.signature);
}

/** A shared-key (compat) token: `base64url({"opToken": claims, "signature": hex HMAC})`, with a fresh nonce unless one is given. */
export function mintOpToken(key: Buffer, claims: Omit<OpTokenClaims, 'nonce'> & { nonce?: string }): string {
  const opToken = dropUndefined({ ...claims, nonce: claims.nonce ?? randomBytes(16).toString('hex') });
  const signature = signOpToken(key, opToken).toString('hex');
  return Buffer.from(JSON.stringify({ opToken, signature }), 'utf8').toString('base64url');
}

/** Decodes and checks the shape of a token (either format); throws MalformedOpToken naming the first problem. */
export function decodeOpToken(token: string): DecodedOpToken {
  if (token.length > MAX_OP_TOKEN_LENGTH) throw new MalformedOpToken(`longer than ${MAX_OP_TOKEN_LENGTH} characters`);
  const outer = parseJson(decodeBase64url(token));
  if (!isObject(outer)) throw new MalformedOpToken('does not decode to a JSON object');
  const { opToken, signature, signatures } = outer;
  if (!isObject(opToken)) throw new MalformedOpToken('opToken: expected an object');
  for (const key of Object.keys(outer)) {
    if (key !== 'opToken' && key !== 'signature' && key !== 'signatures') throw new MalformedOpToken(`${key.slice(0, 64)}: not a token field`);
  }
  if (signatures !== undefined) {
    if (signature !== undefined) throw new MalformedOpToken('signature and signatures: a token has one or the other');
    const sigs = readSignatures(signatures);
    const claims = readClaims(opToken, ED25519_FIELDS);
    return { format: 'ed25519', claims: { ...claims, signers: [...sigs.keys()] }, signed: opToken, signatures: sigs };
  }
  if (typeof signature !== 'string' || !HEX_SHA256.test(signature))
    throw new MalformedOpToken('signature: expected 64 hex digits (HMAC-SHA256), or signatures');
  return { format: 'shared-key', claims: readClaims(opToken, SHARED_KEY_FIELDS), signed: opToken, signature: Buffer.from(signature, 'hex') };
}

/** `signatures`: signer name → base64url of a 64-byte Ed25519 signature. */
function readSignatures(v: unknown): Map<string, Buffer> {
  if (!isObject(v)) throw new MalformedOpToken('signatures: expected an object of signer name to signature');
  const entries = Object.entries(v);
  if (entries.length > MAX_SIGNERS) throw new MalformedOpToken(`signatures: at most ${MAX_SIGNERS}`);
  const out = new Map<string, Buffer>();
  for (const [name, sig] of entries) {
    if (!SIGNER_NAME.test(name)) throw new MalformedOpToken('signatures: signer names are 1-64 printable characters without spaces');
    let bytes: Buffer | undefined;
    try {
      bytes = typeof sig === 'string' ? decodeBase64url(sig) : undefined;
    } catch {
      bytes = undefined;
    }
    if (!bytes || bytes.length !== 64) throw new MalformedOpToken(`signatures.${name}: expected base64url of a 64-byte Ed25519 signature`);
    out.set(name, bytes);
  }
  return out;
}

/**
 * Strict base64url: Buffer would skip a dangling character, ignore stray low bits and misplaced
 * padding, so several strings would pass for one token; only the canonical encoding (padded or not) does.
 */
export function decodeBase64url(token: string): Buffer {
  const unpadded = token.replace(/=+$/, '');
  const paddingFits = unpadded.length === token.length || token.length % 4 === 0;
  if (!BASE64URL.test(token) || !paddingFits || unpadded.length % 4 === 1) throw new MalformedOpToken('not base64url');
  const bytes = Buffer.from(unpadded, 'base64url');
  if (bytes.toString('base64url') !== unpadded) throw new MalformedOpToken('not base64url (not its canonical encoding)');
  return bytes;
}

/** JSON from UTF-8 bytes; invalid UTF-8 is refused rather than read as U+FFFD. */
function parseJson(bytes: Buffer): unknown {
  let text: string;
  try {
    text = STRICT_UTF8.decode(bytes);
  } catch {
    throw new MalformedOpToken('does not decode to UTF-8 text');
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new MalformedOpToken('does not decode to JSON');
  }
}

/** Throws MalformedOpToken when an Ed25519 token of these claims would be refused as malformed. */
export function checkClaims(claims: Record<string, unknown>): void {
  readClaims(claims, ED25519_FIELDS);
}

function readClaims(o: Record<string, unknown>, fields: ReadonlySet<string>): OpTokenClaims {
  for (const key of Object.keys(o)) if (!fields.has(key)) throw new MalformedOpToken(`opToken.${key.slice(0, 64)}: not an op token field`);
  if (!(LIFECYCLE_OPERATIONS as readonly unknown[]).includes(o.operation)) {
    throw new MalformedOpToken(`opToken.operation: expected one of ${LIFECYCLE_OPERATIONS.join(', ')}`);
  }
  const claims: Record<string, unknown> = { operation: o.operation };
  for (const field of STRING_FIELDS) {
    const v = o[field];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'string' || v.length === 0 || v.length > 255) throw new MalformedOpToken(`opToken.${field}: expected a string of 1-255 characters`);
    claims[field] = v;
  }
  for (const [field, max] of Object.entries(INTEGER_FIELDS)) {
    const v = o[field];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1 || v > max) throw new MalformedOpToken(`opToken.${field}: expected an integer of 1-${max}`);
    claims[field] = v;
  }
  const operation = o.operation as LifecycleOperation;
  if (claims.modelId === undefined && operation !== 'cache-flush') throw new MalformedOpToken(`opToken.modelId: required for ${operation}`);
  if (claims.scope === undefined && operation === 'cache-flush') throw new MalformedOpToken('opToken.scope: required for cache-flush');
  if (typeof o.issuedAt !== 'number' || !Number.isSafeInteger(o.issuedAt) || o.issuedAt < 0) {
    throw new MalformedOpToken('opToken.issuedAt: expected Unix seconds (a non-negative integer)');
  }
  claims.issuedAt = o.issuedAt;
  if (fields.has('signers')) {
    const signers = o.signers;
    if (
      !Array.isArray(signers) ||
      signers.length === 0 ||
      signers.length > MAX_SIGNERS ||
      !signers.every((s) => typeof s === 'string' && SIGNER_NAME.test(s))
    ) {
      throw new MalformedOpToken(`opToken.signers: expected 1-${MAX_SIGNERS} names of 1-64 printable characters`);
    }
    claims.signers = signers;
  } else claims.signers = [];
  if (typeof o.nonce !== 'string' || !NONCE.test(o.nonce)) throw new MalformedOpToken('opToken.nonce: expected 8-128 printable characters without spaces');
  claims.nonce = o.nonce;
  return claims as unknown as OpTokenClaims;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

export function dropUndefined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}
