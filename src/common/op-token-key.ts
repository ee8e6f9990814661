import { readFileSync, statSync } from 'node:fs';

/**
 * The governance key: the content of the file at VERIFIED_OP_TOKEN_KEY_PATH, one trailing newline
 * removed (`echo "$KEY" > file` writes one). Throws an Error naming the file and the problem.
 */
export function readOpTokenKey(path: string): Buffer {
  let content: Buffer;
  try {
    content = readFileSync(path);
  } catch (e) {
    throw new Error(`"${path}" cannot be read: ${(e as Error).message}`);
  }
  const key = stripTrailingNewline(content);
  if (key.length === 0) throw new Error(`"${path}" is empty: it must hold the shared HMAC key`);
  return key;
}

/** A warning when group or others may read the key file (it should be 0600 or 0400), else undefined. */
export function keyFilePermissionWarning(path: string): string | undefined {
  try {
    const mode = statSync(path).mode;
    if ((mode & 0o044) === 0) return undefined;
    return `VERIFIED_OP_TOKEN_KEY_PATH "${path}" is readable by ${mode & 0o004 ? 'every user' : 'its group'} (mode ${(mode & 0o777).toString(8).padStart(4, '0')}): anyone who reads it can sign lifecycle operations; chmod 600 it`;
  } catch {
    return undefined;
  }
}

function stripTrailingNewline(b: Buffer): Buffer {
  let end = b.length;
  if (end > 0 && b[end - 1] === 0x0a) end--;
  if (end > 0 && b[end - 1] === 0x0d && end < b.length) end--;
  return b.subarray(0, end);
}
