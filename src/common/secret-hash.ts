import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

/** scrypt parameters: N=2^14, r=8, p=1 (OWASP minimum for scrypt), 32-byte key. */
const N = 16384;
const R = 8;
const P = 1;
const KEY_LEN = 32;

function derive(secret: string, salt: Buffer, n: number, r: number, p: number): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(secret, salt, KEY_LEN, { N: n, r, p, maxmem: 128 * n * r * 2 }, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

/** Hashes a secret as `scrypt$N$r$p$<salt b64>$<key b64>`; only this form is ever stored. */
export async function hashSecret(secret: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(secret, salt, N, R, P);
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64')}$${key.toString('base64')}`;
}

interface ParsedHash {
  n: number;
  r: number;
  p: number;
  salt: Buffer;
  key: Buffer;
}

/** Splits `scrypt$N$r$p$salt$key`, accepting only parameters scrypt can run with sane cost. */
function parseHash(stored: string): ParsedHash | undefined {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return undefined;
  const [n, r, p] = parts.slice(1, 4).map(Number);
  const powerOfTwo = Number.isInteger(n) && n > 1 && (n & (n - 1)) === 0 && n <= 2 ** 20;
  if (!powerOfTwo || !Number.isInteger(r) || r < 1 || r > 32 || !Number.isInteger(p) || p < 1 || p > 16) return undefined;
  const salt = Buffer.from(parts[4], 'base64');
  const key = Buffer.from(parts[5], 'base64');
  if (salt.length < 8 || key.length !== KEY_LEN) return undefined;
  return { n, r, p, salt, key };
}

/** Whether a stored hash has the form `hashSecret` produces (checked at boot). */
export function isWellFormedSecretHash(stored: string): boolean {
  return parseHash(stored) !== undefined;
}

/** Constant-time check of a presented secret against a stored hash. Malformed hashes never match. */
export async function verifySecret(secret: string, stored: string): Promise<boolean> {
  const parsed = parseHash(stored);
  if (!parsed) return false;
  try {
    const actual = await derive(secret, parsed.salt, parsed.n, parsed.r, parsed.p);
    return timingSafeEqual(actual, parsed.key);
  } catch {
    return false;
  }
}
