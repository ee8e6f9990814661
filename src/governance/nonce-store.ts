/**
 * Replay protection for op tokens: every nonce is claimed once. Persisted (the TypeORM
 * implementation is nonce-store.typeorm.ts), so a token used before a restart, or on another
 * gateway replica sharing the database, stays refused.
 */
export abstract class NonceStore {
  /**
   * Claims `nonce` until `expiresAt` (epoch ms); false when it is already claimed and not yet
   * expired as of `now`. Atomic: of two concurrent claims of one nonce, one wins.
   */
  abstract claim(nonce: string, expiresAt: number, now: number): Promise<boolean>;
  /** Forgets the nonces expired before `now`; returns how many. */
  abstract prune(now: number): Promise<number>;
}
