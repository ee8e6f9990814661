import { Clock } from '../common/clock';
import { Errors, GatewayError } from '../common/gateway-error';
import { NonceStore } from './nonce-store';
import { decodeOpToken, DecodedOpToken, hasValidSignature, LifecycleOperation, MalformedOpToken, OpTokenClaims } from './op-token';

/** How far `issuedAt` may be from the gateway's clock, either way. */
export const OP_TOKEN_WINDOW_MS = 5 * 60_000;

/** What the request asks for: the token must have been signed for exactly this. */
export interface RequestedOperation {
  operation: LifecycleOperation;
  modelId?: string;
  /** cache-flush only. */
  scope?: string;
  tenantId?: string;
  tag?: string;
  /** model-load only: the model the load would evict first. */
  evictModel?: string;
}

export interface GovernancePolicy {
  key: Buffer;
  signers: readonly string[];
  requiredSigners: number;
}

/**
 * Verifies a `verifiedOpToken` in the documented order, each failure its own error:
 * well-formed (400) → signature, constant-time (401) → `issuedAt` within ±5 minutes (401) → nonce
 * never seen, claimed in the persisted store (401) → operation, model and scope equal to the
 * request's (403) → signers distinct (403) → all known (403) → at least M of the N (403).
 * A token whose signature and time check out is spent from then on, whatever follows.
 */
export class OpTokenVerifier {
  private readonly known: ReadonlySet<string>;

  constructor(
    private readonly policy: GovernancePolicy,
    private readonly nonces: NonceStore,
    private readonly clock: Clock,
  ) {
    this.known = new Set(policy.signers);
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

  /** Resolves with the verified claims, or rejects with the GatewayError of the first failed check. */
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
    if (!hasValidSignature(this.policy.key, decoded)) throw Errors.opTokenBadSignature();
    const claims = decoded.claims;
    const now = this.clock.now();
    const skewMs = now - claims.issuedAt * 1000;
    if (Math.abs(skewMs) > OP_TOKEN_WINDOW_MS) throw Errors.opTokenExpired(Math.trunc(skewMs / 1000), OP_TOKEN_WINDOW_MS / 1000);
    // Remembered while a token with this nonce could still pass the time check.
    if (!(await this.nonces.claim(claims.nonce, claims.issuedAt * 1000 + OP_TOKEN_WINDOW_MS, now))) throw Errors.opTokenReplayed();
    const mismatch = firstMismatch(claims, requested);
    if (mismatch) throw mismatch;
    const repeated = claims.signers.filter((s, i) => claims.signers.indexOf(s) !== i);
    if (repeated.length) throw Errors.opTokenDuplicateSigners([...new Set(repeated)]);
    const unknown = claims.signers.filter((s) => !this.known.has(s));
    if (unknown.length) throw Errors.opTokenUnknownSigner(unknown);
    if (claims.signers.length < this.policy.requiredSigners) {
      throw Errors.opTokenInsufficientSigners(claims.signers.length, this.policy.requiredSigners, this.policy.signers.length);
    }
    return claims;
  }
}

/** The operation, model and scope must be the request's; tenant, tag and evicted model too when the token names them. */
function firstMismatch(claims: OpTokenClaims, requested: RequestedOperation): GatewayError | undefined {
  if (claims.operation !== requested.operation) return Errors.opTokenMismatch('operation', claims.operation, requested.operation);
  if (claims.modelId !== requested.modelId) return Errors.opTokenMismatch('modelId', claims.modelId, requested.modelId);
  // A load token that names the model to evict binds the eviction (one that does not leaves it to the admin).
  if (requested.operation === 'model-load' && claims.evictModel !== undefined && claims.evictModel !== requested.evictModel) {
    return Errors.opTokenMismatch('evictModel', claims.evictModel, requested.evictModel);
  }
  if (requested.operation !== 'cache-flush') return undefined;
  if (claims.scope !== requested.scope) return Errors.opTokenMismatch('scope', claims.scope, requested.scope);
  if (claims.tenantId !== undefined && claims.tenantId !== requested.tenantId) return Errors.opTokenMismatch('tenantId', claims.tenantId, requested.tenantId);
  if (claims.tag !== undefined && claims.tag !== requested.tag) return Errors.opTokenMismatch('tag', claims.tag, requested.tag);
  return undefined;
}
