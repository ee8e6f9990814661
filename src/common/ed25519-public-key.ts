/** Ed25519 public keys as configured (governance signers) and as printed by `switchboard op-token keygen`. */
import { createPublicKey, KeyObject } from 'node:crypto';

/** DER prefix of an Ed25519 SubjectPublicKeyInfo (RFC 8410); the raw 32-byte key follows. */
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
const BASE64 = /^[A-Za-z0-9+/_-]+={0,2}$/;

/**
 * A configured public key: base64 (standard or URL alphabet, padding optional) of either the raw
 * 32-byte Ed25519 key (what `switchboard op-token keygen` prints) or its SPKI DER encoding (44
 * bytes: what `openssl pkey -pubout -outform DER | base64` writes). Throws an Error saying why not.
 */
export function parsePublicKey(text: string): KeyObject {
  const trimmed = text.trim();
  if (!BASE64.test(trimmed)) throw new Error('not base64');
  const bytes = Buffer.from(trimmed.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  let der: Buffer;
  if (bytes.length === 32) der = Buffer.concat([SPKI_PREFIX, bytes]);
  else if (bytes.length === 44 && bytes.subarray(0, 12).equals(SPKI_PREFIX)) der = bytes;
  else throw new Error(`expected base64 of a raw 32-byte Ed25519 public key or its 44-byte SPKI DER, got ${bytes.length} bytes`);
  return createPublicKey({ key: der, format: 'der', type: 'spki' });
}

/** The raw 32-byte public key, base64 (standard alphabet, padded): the form the docs and `keygen` use. */
export function publicKeyText(key: KeyObject): string {
  return key.export({ format: 'der', type: 'spki' }).subarray(SPKI_PREFIX.length).toString('base64');
}
