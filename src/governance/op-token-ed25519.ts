import { createPrivateKey, generateKeyPairSync, KeyObject, randomBytes, sign, verify } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { canonicalJson } from '../common/canonical-json';
import { publicKeyText } from '../common/ed25519-public-key';
export { parsePublicKey, publicKeyText } from '../common/ed25519-public-key';
import { decodeOpToken, DecodedOpToken, dropUndefined, MalformedOpToken, OpTokenClaims } from './op-token';

/**
 * Ed25519 op tokens: each signer holds a private key, the gateway their public keys. Every
 * signer signs the same bytes (the canonical JSON of `opToken`), so signatures can be added one at
 * a time, on each signer's own machine, in any order.
 */

/** DER prefix of an Ed25519 PKCS#8 private key; the 32-byte seed follows. */
const PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

/** A new signer key pair: the private key as PKCS#8 PEM (what `keygen` writes), the public key as text. */
export function generateSignerKey(): { privatePem: string; publicKey: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return { privatePem: privateKey.export({ format: 'pem', type: 'pkcs8' }) as string, publicKey: publicKeyText(publicKey) };
}

/** A private key from its 32-byte seed (the docs' worked example; tests). */
export function privateKeyFromSeed(seed: Buffer): KeyObject {
  return createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, seed]), format: 'der', type: 'pkcs8' });
}

/** A signer's private key file: PKCS#8 PEM of an Ed25519 key (`keygen`, or `openssl genpkey -algorithm ed25519`). */
export function readPrivateKey(path: string): KeyObject {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new Error(`"${path}" cannot be read: ${(e as Error).message}`);
  }
  let key: KeyObject;
  try {
    key = createPrivateKey(text);
  } catch {
    throw new Error(`"${path}" does not hold a PEM private key`);
  }
  if (key.asymmetricKeyType !== 'ed25519') throw new Error(`"${path}" holds a ${key.asymmetricKeyType} key, not an Ed25519 one`);
  return key;
}

/** Ed25519 signature of the canonical JSON (UTF-8) of `opToken`. */
export function signClaims(privateKey: KeyObject, opToken: Record<string, unknown>): Buffer {
  return sign(null, Buffer.from(canonicalJson(opToken), 'utf8'), privateKey);
}

export function verifyClaims(publicKey: KeyObject, opToken: Record<string, unknown>, signature: Buffer): boolean {
  try {
    return verify(null, Buffer.from(canonicalJson(opToken), 'utf8'), publicKey, signature);
  } catch {
    return false;
  }
}

/** `base64url({"opToken": …, "signatures": {name: base64url signature}})`. */
export function encodeToken(opToken: Record<string, unknown>, signatures: Map<string, Buffer>): string {
  const sigs = Object.fromEntries([...signatures].map(([name, sig]) => [name, sig.toString('base64url')]));
  return Buffer.from(JSON.stringify({ opToken, signatures: sigs }), 'utf8').toString('base64url');
}

/** An unsigned Ed25519 token for these claims (issued `issuedAt`, a fresh nonce unless given): signers then add their signatures. */
export function unsignedToken(claims: Omit<OpTokenClaims, 'nonce' | 'signers'> & { nonce?: string }): string {
  const opToken = dropUndefined({ ...claims, nonce: claims.nonce ?? randomBytes(16).toString('hex') }) as Record<string, unknown>;
  return encodeToken(opToken, new Map());
}

/** The token with `signer`'s signature added (or replaced): the claims are untouched. Throws MalformedOpToken for a bad or shared-key token. */
export function addSignature(token: string, signer: string, privateKey: KeyObject): string {
  const decoded = decodeOpToken(token);
  if (decoded.format !== 'ed25519') throw new MalformedOpToken('a shared-key (HMAC) token cannot take Ed25519 signatures: mint an Ed25519 one');
  const signatures = new Map(decoded.signatures);
  signatures.set(signer, signClaims(privateKey, decoded.signed));
  // Re-encoded from the decoded object: the signed members are the same, so earlier signatures still verify.
  return encodeToken(decoded.signed, signatures);
}

/** Per signature of an Ed25519 token: whether it is a configured signer's and verifies. */
export function checkSignatures(
  token: Extract<DecodedOpToken, { format: 'ed25519' }>,
  keys: ReadonlyMap<string, KeyObject>,
): { valid: string[]; invalid: string[]; unknown: string[] } {
  const out = { valid: [] as string[], invalid: [] as string[], unknown: [] as string[] };
  for (const [name, sig] of token.signatures) {
    const key = keys.get(name);
    if (!key) out.unknown.push(name);
    else (verifyClaims(key, token.signed, sig) ? out.valid : out.invalid).push(name);
  }
  return out;
}
