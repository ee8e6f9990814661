import { createHash, randomBytes } from 'node:crypto';

/** Every key the gateway issues starts with this; see `looksLikeGatewayKey`. */
export const KEY_PREFIX = 'sb-';
/** Random characters of a key kept (after `sb-`) as its display prefix. */
const DISPLAY_CHARS = 8;

/** A new client API key: `sb-` + 32 random bytes, base64url (43 characters). */
export function generateKey(): string {
  return `${KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
}

/** What is stored and looked up: the SHA-256 of the key's UTF-8 bytes, lower-case hex. */
export function hashKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** The part of a key that may be shown and stored to tell keys apart (`sb-` + 8 characters). */
export function displayPrefix(key: string): string {
  return key.slice(0, KEY_PREFIX.length + DISPLAY_CHARS);
}

/**
 * Credentials in the gateway's own format are never forwarded to workers, whether or not keys are
 * required: an unknown one (mistyped, deleted) is refused like any invalid key.
 */
export function looksLikeGatewayKey(value: string): boolean {
  return value.startsWith(KEY_PREFIX);
}

/** Keys are visible ASCII: no spaces, tabs, control or non-ASCII characters. */
const KEY_CHARACTERS = /^[\x21-\x7e]+$/;

export function hasOnlyKeyCharacters(value: string): boolean {
  return KEY_CHARACTERS.test(value);
}
