import { hashSecret, verifySecret } from '../common/secret-hash';
import { VerifiedSecretCache } from '../auth/verified-secret-cache';
import type { Provider, WorkerAuthResult } from './provider';

/**
 * Checks a connecting worker's secret against its provider's stored hash, for `ProvidersService`:
 * scrypt, skipped for a secret known good for the current hash (`VerifiedSecretCache`).
 */
export class WorkerSecrets {
  private readonly verified = new VerifiedSecretCache();
  /** Compared against when the provider is unknown, so timing does not reveal provider names. */
  private dummyHash: Promise<string> | undefined;

  /**
   * Whether `secret` is known to match `hash` without a scrypt check (synchronous, microseconds):
   * it passed one before, or the gateway was given it in plain text.
   */
  isVerified(name: string, secret: string | undefined, hash: string | null | undefined): boolean {
    return !!hash && !!secret && this.verified.matches(name, secret, hash);
  }

  /** A secret the gateway holds in plain text is known good for its hash: no scrypt needed to recognise it. */
  prime(name: string, secret: string | undefined, hash: string | null): void {
    if (secret && hash) this.verified.remember(name, secret, hash);
  }

  /** Forgets what was verified for a provider (its secret changed, or it is gone). */
  forget(name: string): void {
    this.verified.forget(name);
  }

  /** `current` is read again after each await: the provider may change or go while the secret is checked. */
  async verify(name: string, secret: string | undefined, current: (name: string) => Provider | undefined): Promise<WorkerAuthResult> {
    const provider = current(name);
    if (!provider || !provider.secretHash) {
      await verifySecret(secret ?? '', await (this.dummyHash ??= hashSecret('switchboard-dummy')));
      return provider ? 'bad_secret' : 'unknown_provider';
    }
    if (!secret) {
      // Same cost as an unknown provider, so timing does not reveal which provider names exist.
      await verifySecret('', await (this.dummyHash ??= hashSecret('switchboard-dummy')));
      return 'no_secret';
    }
    const hash = provider.secretHash;
    if (!this.verified.matches(name, secret, hash)) {
      if (!(await verifySecret(secret, hash))) return 'bad_secret';
      this.verified.remember(name, secret, hash);
    }
    const latest = current(name);
    // The secret changed while it was being checked: it matched the old one.
    if (latest?.secretHash !== hash) return 'bad_secret';
    // Checked after the secret so a disabled provider answers exactly like a wrong secret.
    return latest.enabled ? 'ok' : 'disabled';
  }
}
