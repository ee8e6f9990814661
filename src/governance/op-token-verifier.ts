import type { KeyObject } from 'node:crypto';
import { Clock } from '../common/clock';
import { Errors, GatewayError } from '../common/gateway-error';
import { NonceStore } from './nonce-store';
import { BOUND_FIELDS, BoundClaims, decodeOpToken, DecodedOpToken, hasValidSignature, MalformedOpToken, OpTokenClaims } from './op-token';
import { checkSignatures } from './op-token-ed25519';

/** How far `issuedAt` may be from the gateway's clock, either way. */
export const OP_TOKEN_WINDOW_MS = 5 * 60_000;

/** What the request asks for: the token must have been signed for exactly this. */
export type RequestedOperation = BoundClaims;

export interface GovernancePolicy {
  /** Signer name → Ed25519 public key (the N signers). */
  publicKeys: ReadonlyMap<string, KeyObject>;
  /** The shared HMAC key, when the seed's single-authority format is explicitly kept (compat). */
  sharedKey?: Buffer;
  /** Names a shared-key token may list (compat only). */
  sharedKeySigners?: readonly string[];
  requiredSigners: number;
}

/**
 * Verifies a `verifiedOpToken` in the documented order, each failure its own error:
 * well-formed (400) → signatures (401: every one by a configured signer verifies, and there is
 * at least one) → `issuedAt` within ±5 minutes (401) → nonce never seen, claimed in the persisted
 * store (401) → every bound field equal to the request's (403) → signers distinct (403) → all
 * configured (403) → at least M valid signatures (403). A token whose signatures and time check
 * out is spent from then on, whatever follows.
 */
export class OpTokenVerifier {
  private readonly sharedKnown: ReadonlySet<string>;

  constructor(
    private readonly policy: GovernancePolicy,
    private readonly nonces: NonceStore,
    private readonly clock: Clock,
  ) {
    this.sharedKnown = new Set(policy.sharedKeySigners ?? []);
  }

  /** Decodes without verifying (a refusal's audit row names what the token claimed); undefined when malformed. */
  static peek(token: unknown): OpTokenClaims | undefined {
    if (typeof token !== 'string') return undefined;
    try {
      return decodeOpToken(token).claims;
    } catch {
      return undefined;
    }
  }

  /** Resolves with the verified claims (`signers`: those whose signatures verified), or rejects with the first failed check's GatewayError. */
  async verify(token: unknown, requested: RequestedOperation): Promise<OpTokenClaims> {
    if (token === undefined || token === null || token === '') throw Errors.opTokenMissing();
    if (typeof token !== 'string') throw Errors.opTokenMalformed('expected a string');
    let decoded: DecodedOpToken;
    try {
      decoded = decodeOpToken(token);
    } catch (e) {
      if (e instanceof MalformedOpToken) throw Errors.opTokenMalformed(e.message);
      throw e;
    }
    const signers = this.checkSignatures(decoded);
    const claims = decoded.claims;
    const now = this.clock.now();
    const skewMs = now - claims.issuedAt * 1000;
    if (Math.abs(skewMs) > OP_TOKEN_WINDOW_MS) throw Errors.opTokenExpired(Math.trunc(skewMs / 1000), OP_TOKEN_WINDOW_MS / 1000);
    // Remembered while a token with this nonce could still pass the time check.
    if (!(await this.nonces.claim(claims.nonce, claims.issuedAt * 1000 + OP_TOKEN_WINDOW_MS, now))) throw Errors.opTokenReplayed();
    const mismatch = firstMismatch(claims, requested);
    if (mismatch) throw mismatch;
    // Ed25519 signatures are keyed by name, so a name cannot appear twice; a shared-key token lists its names.
    const repeated = claims.signers.filter((s, i) => claims.signers.indexOf(s) !== i);
    if (repeated.length) throw Errors.opTokenDuplicateSigners([...new Set(repeated)]);
    if (signers.unknown.length) throw Errors.opTokenUnknownSigner(signers.unknown);
    const n = decoded.format === 'ed25519' ? this.policy.publicKeys.size : this.sharedKnown.size;
    if (signers.valid.length < this.policy.requiredSigners) throw Errors.opTokenInsufficientSigners(signers.valid.length, this.policy.requiredSigners, n);
    return { ...claims, signers: signers.valid };
  }

  /**
   * Step 1. Ed25519: a configured signer's signature that does not verify fails the token (the
   * claims were altered after they signed, or they used another key); a token no configured
   * signer validly signed authenticates nothing, so it may not spend a nonce. Unknown names are
   * judged later (step 6). Shared key: the HMAC, only when compat is on.
   */
  private checkSignatures(decoded: DecodedOpToken): { valid: string[]; unknown: string[] } {
    if (decoded.format === 'ed25519') {
      const { valid, invalid, unknown } = checkSignatures(decoded, this.policy.publicKeys);
      if (invalid.length)
        throw Errors.opTokenBadSignature(
          `the signature of ${invalid.join(', ')} does not verify (the claims were altered after signing, or another key signed)`,
        );
      if (valid.length === 0) throw Errors.opTokenBadSignature(decoded.signatures.size ? 'no configured signer signed it' : 'it carries no signature');
      return { valid, unknown };
    }
    if (!this.policy.sharedKey) throw Errors.opTokenBadSignature('shared-key (HMAC) tokens are not accepted: GOVERNANCE_SHARED_KEY_COMPAT is off');
    if (!hasValidSignature(this.policy.sharedKey, decoded)) throw Errors.opTokenBadSignature();
    const unknown = decoded.claims.signers.filter((s) => !this.sharedKnown.has(s));
    return { valid: [...new Set(decoded.claims.signers)].filter((s) => this.sharedKnown.has(s)), unknown: [...new Set(unknown)] };
  }
}

/** Every bound field must be the request's: a value in one and not the other is a mismatch too. */
function firstMismatch(claims: OpTokenClaims, requested: RequestedOperation): GatewayError | undefined {
  for (const field of BOUND_FIELDS) {
    const signed = claims[field];
    const asked = requested[field];
    if (signed !== asked)
      return Errors.opTokenMismatch(field, signed === undefined ? undefined : String(signed), asked === undefined ? undefined : String(asked));
  }
  return undefined;
}
