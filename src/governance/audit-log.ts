import type { LifecycleOperation } from './op-token';

/**
 * `refused`: answered with an error before anything was sent to a worker; `accepted`: sent to its
 * workers; `completed` / `failed`: how an accepted operation ended (a row of its own).
 */
export const AUDIT_OUTCOMES = ['accepted', 'refused', 'completed', 'failed'] as const;
export type AuditOutcome = (typeof AUDIT_OUTCOMES)[number];

/** What a lifecycle request named as its target. */
export interface AuditTarget {
  pool?: string;
  workerId?: string;
  replicas?: number;
  tenantId?: string;
  tag?: string;
  /** A load's `evictModel`: unloaded on the chosen workers before the load. */
  evictModel?: string;
}

/** Who did it (issue 21): the actor the admin guard authenticated (auth/admin-actor.ts), or `sighup`. Never a secret. */
export interface AuditActor {
  kind: 'admin-token' | 'sso' | 'sighup';
  subject: string;
  name?: string;
}

/**
 * `lifecycle_audit.operation` of a row that is not a lifecycle operation (an admin mutation: its
 * `action` says which). Kept for the column, which predates the other admin actions.
 */
export const ADMIN_OPERATION = 'admin';

/** Who asked and from where: the same for every row of an admin request. */
export interface AuditOrigin {
  /** Null on a request refused before anyone was authenticated. */
  actor: AuditActor | null;
  role: string | null;
  /** The client address (resolved through trusted proxies, like the admin token's limiter). */
  sourceAddress: string | null;
  correlationId: string | null;
}

export interface AuditEntry extends Partial<AuditOrigin> {
  /** Epoch ms. */
  at: number;
  /** A lifecycle operation, or `admin` for every other admin action (see `action`). */
  operation: LifecycleOperation | typeof ADMIN_OPERATION;
  /** `keys.create`, `workers.drain`, `config.reload`, `lifecycle.model-load`…; defaults to `lifecycle.<operation>`. */
  action?: string;
  /** What the action acted on: a key or tenant id, a provider, pool or worker name, `config`. */
  targetId?: string | null;
  /** What changed, secrets left out (docs/enterprise.md, "Audit trail"). */
  summary?: Record<string, unknown> | null;
  modelId: string | null;
  scope: string | null;
  target: AuditTarget;
  workers: string[];
  signers: string[] | null;
  nonce: string | null;
  adminIdentity: string | null;
  outcome: AuditOutcome;
  status: number;
  errorCode: string | null;
  error: string | null;
  taskId: string | null;
}

export interface AuditRecord extends AuditEntry {
  /** Increases with every row: the newest row has the highest id. */
  id: number;
}

/** A validated `GET /admin/audit` query; times are epoch ms, `since` inclusive, `until` exclusive. */
export interface AuditQuery {
  operation?: LifecycleOperation;
  outcome?: AuditOutcome;
  modelId?: string;
  taskId?: string;
  /** An actor's subject (`admin-token`, `sighup`, an SSO `sub`). */
  actor?: string;
  action?: string;
  targetId?: string;
  since?: number;
  until?: number;
  /** Rows with an id below this one (the next page of a newest-first listing). */
  before?: number;
  limit: number;
}

/**
 * The codes of the admin token check (no or a wrong token; no admin token configured; an address
 * throttled for wrong tokens): rows
 * refused with one of them are those anyone can cause, kept for a shorter time.
 */
export const ADMIN_TOKEN_REFUSAL_CODES: readonly string[] = ['unauthorized', 'forbidden', 'auth_rate_limited'];

/** Which rows a prune deletes: all of them, or only those refused at the admin token check. */
export type AuditRows = 'all' | 'unauthenticated';

/** Persistence port of the lifecycle audit trail; the TypeORM implementation is audit-log.typeorm.ts. */
export abstract class AuditLog {
  abstract append(entry: AuditEntry): Promise<void>;
  /** Newest first. */
  abstract list(query: AuditQuery): Promise<AuditRecord[]>;
  /** Deletes such rows written before `cutoff` (epoch ms); returns how many. */
  abstract deleteBefore(cutoff: number, rows: AuditRows): Promise<number>;
}
