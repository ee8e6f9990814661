import { createHmac, randomBytes } from 'node:crypto';

interface Entry {
  provider: string;
  /** The stored hash the secret was verified against; the entry counts only while it is current. */
  secretHash: string;
}

/**
 * Worker secrets that recently passed the scrypt check, so a reconnecting worker costs an HMAC
 * (microseconds) instead of a scrypt (tens of milliseconds of CPU) — 1,000 workers reconnecting
 * after a restart would otherwise cost over half a CPU-minute.
 *
 * Only successes are stored: a wrong secret always goes through scrypt. Keys are HMAC-SHA256 of the
 * secret under a key drawn at process start, so the cache never holds a secret, and its keys are
 * worthless outside this process. Bounded, least recently used entries leave first.
 */
export class VerifiedSecretCache {
  private readonly key = randomBytes(32);
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly maxEntries = 1024) {}

  /** Whether `secret` was verified for `provider` against the hash the provider has now. */
  matches(provider: string, secret: string, secretHash: string): boolean {
    const id = this.idOf(provider, secret);
    const entry = this.entries.get(id);
    if (!entry) return false;
    this.entries.delete(id);
    if (entry.secretHash !== secretHash) return false;
    this.entries.set(id, entry); // now the most recently used
    return true;
  }

  /** Records a successful scrypt verification of `secret` against `secretHash`. */
  remember(provider: string, secret: string, secretHash: string): void {
    const id = this.idOf(provider, secret);
    this.entries.delete(id);
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value as string);
    this.entries.set(id, { provider, secretHash });
  }

  /** Drops every entry of a provider (its secret changed, or it was deleted). */
  forget(provider: string): void {
    for (const [id, entry] of this.entries) if (entry.provider === provider) this.entries.delete(id);
  }

  size(): number {
    return this.entries.size;
  }

  private idOf(provider: string, secret: string): string {
    const mac = createHmac('sha256', this.key).update(secret).digest('base64');
    return JSON.stringify([provider, mac]);
  }
}
