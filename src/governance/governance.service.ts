import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { APP_CONFIG, AppConfig } from '../config';
import { CLOCK, Clock } from '../common/clock';
import { Errors } from '../common/gateway-error';
import { RetentionTasks } from '../common/retention-tasks';
import { NonceStore } from './nonce-store';
import { lifecycleEnabled } from '../config/sections/governance';
import { OpTokenClaims } from './op-token';
import { parsePublicKey } from './op-token-ed25519';
import { keyFilePermissionWarning, readOpTokenKey } from '../common/op-token-key';
import { OpTokenVerifier, RequestedOperation } from './op-token-verifier';

/**
 * Governance of lifecycle operations: enabled when the signers' Ed25519 public keys are configured
 * (or, explicitly, the seed's shared HMAC key with GOVERNANCE_SHARED_KEY_COMPAT). Keys are read
 * once, at boot; changing them takes a restart. Spent nonces are pruned by the cleanup job once no
 * token could carry them any more.
 */
@Injectable()
export class GovernanceService {
  private readonly log = new Logger('Governance');
  private readonly verifier: OpTokenVerifier | undefined;

  constructor(@Inject(APP_CONFIG) config: AppConfig, @Inject(CLOCK) clock: Clock, nonces: NonceStore, @Optional() cleanup?: RetentionTasks) {
    const { keyPath, signers, signerKeys, sharedKeyCompat, requiredSigners } = config.governance;
    if (lifecycleEnabled(config.governance)) {
      const publicKeys = new Map(Object.entries(signerKeys).map(([name, key]) => [name, parsePublicKey(key)]));
      let sharedKey: Buffer | undefined;
      if (sharedKeyCompat && keyPath !== undefined) {
        sharedKey = readOpTokenKey(keyPath);
        const warning = keyFilePermissionWarning(keyPath);
        if (warning) this.log.warn(warning);
        this.log.warn(
          'GOVERNANCE_SHARED_KEY_COMPAT is on: shared-key (HMAC) op tokens are accepted, and whoever holds VERIFIED_OP_TOKEN_KEY_PATH can sign as every signer (a single authority, not M of N)',
        );
      }
      this.verifier = new OpTokenVerifier({ publicKeys, sharedKey, sharedKeySigners: sharedKey ? signers : undefined, requiredSigners }, nonces, clock);
      this.log.log(`model lifecycle enabled: op tokens need ${requiredSigners} of ${signers.length} signers (${signers.join(', ')})`);
    }
    cleanup?.addRetentionTask('op_token_nonces', (now) => nonces.prune(now));
  }

  get enabled(): boolean {
    return this.verifier !== undefined;
  }

  /** Resolves with the verified claims, or rejects with the first failed check's GatewayError. */
  verify(token: unknown, requested: RequestedOperation): Promise<OpTokenClaims> {
    if (!this.verifier) return Promise.reject(Errors.lifecycleDisabled());
    return this.verifier.verify(token, requested);
  }
}

/**
 * Who presented a request, for the audit trail: a short fingerprint of the bearer token (never the
 * token), or null without one.
 */
export function adminIdentity(authorization: string | undefined): string | null {
  const m = /^Bearer\s+(.+)$/i.exec(authorization ?? '');
  if (!m) return null;
  return `sha256:${createHash('sha256').update(m[1].trim()).digest('hex').slice(0, 12)}`;
}
