import { GatewayError, statusOf } from '../common/gateway-error';
import { AuditEntry, AuditOrigin, AuditOutcome, AuditTarget } from '../governance/audit-log';
import { LifecycleOperation, OpTokenClaims } from '../governance/op-token';

/**
 * What one lifecycle request has revealed so far, for its audit rows: a refusal records what was
 * known when it was refused; an accepted operation records its acceptance and, later, its end.
 */
export class AuditContext {
  modelId: string | null = null;
  scope: string | null = null;
  target: AuditTarget = {};
  signers: string[] | null = null;
  nonce: string | null = null;
  workers: string[] = [];
  taskId: string | null = null;
  /** Set once a row was written for the request itself (the refusal handler then writes none). */
  recorded = false;

  constructor(
    readonly operation: LifecycleOperation,
    readonly adminIdentity: string | null,
    /** Who asked and from where (issue 21's audit trail). */
    readonly origin: Partial<AuditOrigin> = {},
  ) {}

  /**
   * What a raw body says, before it is validated, so that a refusal for a bad body still names
   * the model and the token's claims where it can. Values the validation then accepts replace these.
   */
  fromRawBody(raw: unknown, peek: (token: unknown) => OpTokenClaims | undefined): void {
    let body: unknown;
    try {
      body = typeof raw === 'string' ? JSON.parse(raw) : undefined;
    } catch {
      return;
    }
    if (!body || typeof body !== 'object' || Array.isArray(body)) return;
    const o = body as Record<string, unknown>;
    const text = (v: unknown, max: number) => (typeof v === 'string' && v.length > 0 && v.length <= max ? v : undefined);
    this.modelId = text(o.modelId, 255) ?? null;
    this.scope = text(o.scope, 16) ?? null;
    this.target = definedOnly({
      pool: text(o.pool, 64),
      workerId: text(o.workerId, 128),
      tenantId: text(o.tenantId, 64),
      tag: text(o.tag, 128),
      evictModel: text(o.evictModel, 255),
    });
    this.claimed(peek(o.verifiedOpToken));
  }

  /** The signers and nonce a token claims (whether or not it verifies). */
  claimed(claims: OpTokenClaims | undefined): void {
    if (!claims) return;
    this.signers = [...claims.signers];
    this.nonce = claims.nonce;
  }

  entry(at: number, outcome: AuditOutcome, status: number, error?: { code: string; message: string }): AuditEntry {
    return {
      ...this.origin,
      at,
      operation: this.operation,
      modelId: this.modelId,
      scope: this.scope,
      target: this.target,
      workers: this.workers,
      signers: this.signers,
      nonce: this.nonce,
      adminIdentity: this.adminIdentity,
      outcome,
      status,
      errorCode: error?.code ?? null,
      error: error?.message ?? null,
      taskId: this.taskId,
    };
  }

  /** The row of a request refused with `error` (any exception: unexpected ones are `internal_error`). */
  refusal(at: number, error: unknown): AuditEntry {
    const gatewayError = error instanceof GatewayError ? error : undefined;
    const code = gatewayError?.code ?? 'internal_error';
    return this.entry(at, 'refused', statusOf(code), { code, message: gatewayError?.message ?? 'Internal error' });
  }
}

/** Drops undefined members, so audit targets hold only what was asked. */
export function definedOnly<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}
