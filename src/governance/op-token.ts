import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { canonicalJson } from '../common/canonical-json';

/** The governed operations a `verifiedOpToken` may authorize (runner API names). */
export const LIFECYCLE_OPERATIONS = ['model-load', 'model-unload', 'cache-flush'] as const;
export type LifecycleOperation = (typeof LIFECYCLE_OPERATIONS)[number];

/**
 * What a token's signers signed off. `scope` (and, when present, `tenantId` / `tag`) only mean
 * something for `cache-flush`; every field present is covered by the signature.
 */
export interface OpTokenClaims {
  operation: LifecycleOperation;
  modelId?: string;
  scope?: string;
  tenantId?: string;
  tag?: string;
  /** model-load only: when present, the load may evict exactly this model and no other. */
  evictModel?: string;
  /** Unix seconds. */
  issuedAt: number;
  signers: string[];
  nonce: string;
}

/** A token as it decodes, before anything about it is trusted. */
export interface DecodedOpToken {
  claims: OpTokenClaims;
  /** The `opToken` object as received: the signature covers exactly this. */
  signed: Record<string, unknown>;
  /** 32 bytes (the hex signature decoded). */
  signature: Buffer;
}

/** The token is not a well-formed `verifiedOpToken`; `message` says what is wrong. */
export class MalformedOpToken extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MalformedOpToken';
  }
}

export const MAX_OP_TOKEN_LENGTH = 8192;
export const MAX_SIGNERS = 64;
const CLAIM_FIELDS = new Set(['operation', 'modelId', 'scope', 'tenantId', 'tag', 'evictModel', 'issuedAt', 'signers', 'nonce']);
const BASE64URL = /^[A-Za-z0-9_-]+={0,2}$/;
const HEX_SHA256 = /^[0-9a-fA-F]{64}$/;
const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
/** Printable ASCII without spaces: what a nonce may be made of. */
const NONCE = /^[\x21-\x7e]{8,128}$/;
const SIGNER = /^[\x21-\x7e]{1,64}$/;

/** HMAC-SHA256 of the canonical JSON of `opToken`, keyed with the governance key. */
export function signOpToken(key: Buffer, opToken: Record<string, unknown>): Buffer {
  return createHmac('sha256', key).update(canonicalJson(opToken), 'utf8').digest();
}

/** Whether `signature` is the HMAC of `opToken` under `key` (constant-time comparison). */
export function hasValidSignature(key: Buffer, token: DecodedOpToken): boolean {
  const expected = signOpToken(key, token.signed);
  return expected.length === token.signature.length && timingSafeEqual(expected, token.signature);
}

/** `base64url({"opToken": claims, "signature": hex HMAC})`, with a fresh nonce unless one is given. */
export function mintOpToken(key: Buffer, claims: Omit<OpTokenClaims, 'nonce'> & { nonce?: string }): string {
  const opToken = dropUndefined({ ...claims, nonce: claims.nonce ?? randomBytes(16).toString('hex') });
  const signature = signOpToken(key, opToken).toString('hex');
  return Buffer.from(JSON.stringify({ opToken, signature }), 'utf8').toString('base64url');
}

/** Decodes and checks the shape of a token; throws MalformedOpToken naming the first problem. */
export function decodeOpToken(token: string): DecodedOpToken {
  if (token.length > MAX_OP_TOKEN_LENGTH) throw new MalformedOpToken(`longer than ${MAX_OP_TOKEN_LENGTH} characters`);
  const outer = parseJson(decodeBase64url(token));
  if (!isObject(outer)) throw new MalformedOpToken('does not decode to a JSON object');
  const { opToken, signature } = outer;
  if (!isObject(opToken)) throw new MalformedOpToken('opToken: expected an object');
  if (typeof signature !== 'string' || !HEX_SHA256.test(signature)) throw new MalformedOpToken('signature: expected 64 hex digits (HMAC-SHA256)');
  return { claims: readClaims(opToken), signed: opToken, signature: Buffer.from(signature, 'hex') };
}

/**
 * Strict base64url: Buffer would skip a dangling character, ignore stray low bits and misplaced
 * padding, so several strings would pass for one token; only the canonical encoding (padded or not) does.
 */
function decodeBase64url(token: string): Buffer {
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

/** Throws MalformedOpToken when a token of these claims would be refused as malformed (before its signature is even checked). */
export function checkClaims(claims: Record<string, unknown>): void {
  readClaims(claims);
}

function readClaims(o: Record<string, unknown>): OpTokenClaims {
  for (const key of Object.keys(o)) if (!CLAIM_FIELDS.has(key)) throw new MalformedOpToken(`opToken.${key.slice(0, 64)}: not an op token field`);
  if (!(LIFECYCLE_OPERATIONS as readonly unknown[]).includes(o.operation)) {
    throw new MalformedOpToken(`opToken.operation: expected one of ${LIFECYCLE_OPERATIONS.join(', ')}`);
  }
  const optional = (field: string): string | undefined => {
    const v = o[field];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'string' || v.length === 0 || v.length > 255) throw new MalformedOpToken(`opToken.${field}: expected a string of 1-255 characters`);
    return v;
  };
  const operation = o.operation as LifecycleOperation;
  const modelId = optional('modelId');
  if (modelId === undefined && operation !== 'cache-flush') throw new MalformedOpToken(`opToken.modelId: required for ${operation}`);
  const scope = optional('scope');
  if (scope === undefined && operation === 'cache-flush') throw new MalformedOpToken('opToken.scope: required for cache-flush');
  if (typeof o.issuedAt !== 'number' || !Number.isSafeInteger(o.issuedAt) || o.issuedAt < 0) {
    throw new MalformedOpToken('opToken.issuedAt: expected Unix seconds (a non-negative integer)');
  }
  const signers = o.signers;
  if (!Array.isArray(signers) || signers.length === 0 || signers.length > MAX_SIGNERS || !signers.every((s) => typeof s === 'string' && SIGNER.test(s))) {
    throw new MalformedOpToken(`opToken.signers: expected 1-${MAX_SIGNERS} names of 1-64 printable characters`);
  }
  if (typeof o.nonce !== 'string' || !NONCE.test(o.nonce)) throw new MalformedOpToken('opToken.nonce: expected 8-128 printable characters without spaces');
  return dropUndefined({
    operation,
    modelId,
    scope,
    tenantId: optional('tenantId'),
    tag: optional('tag'),
    evictModel: optional('evictModel'),
    issuedAt: o.issuedAt,
    signers: signers as string[],
    nonce: o.nonce,
  });
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function dropUndefined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}
