import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { AdminAuth } from '../auth/admin-auth';
import { adminActorOf } from '../auth/admin-actor';
import { CLOCK, Clock, systemClock } from '../common/clock';
import { ConfigReloadService, SignalReload } from '../config/config-reload.service';
import { correlationIdOf } from '../observability/correlation-id';
import { ADMIN_OPERATION, AuditEntry, AuditOrigin } from './audit-log';
import { reloadSummary, summaryOf } from './admin-audit-row';
import { AuditTrail } from './audit-trail';

/** The actor of a reload by signal: nobody authenticated it, the operator of the host sent it. */
export const SIGHUP_ORIGIN: AuditOrigin = { actor: { kind: 'sighup', subject: 'sighup' }, role: 'admin', sourceAddress: null, correlationId: null };

/** One admin action's row, before it gets its time and origin. */
export interface AdminActionRow {
  action: string;
  targetId: string | null;
  outcome: 'completed' | 'refused' | 'failed';
  status: number;
  errorCode?: string | null;
  error?: string | null;
  summary: Record<string, unknown> | null;
}

/**
 * The audit trail of every admin action (issue 21) — the lifecycle rows' trail, AuditTrail, with
 * who asked (the actor the admin guard authenticated, its role), from where (client address,
 * correlation id). Rows are written durably: the answer waits for the row (AdminAuditInterceptor).
 * Configuration reloads by SIGHUP come here through ConfigReloadService's signal observers.
 */
@Injectable()
export class AdminAudit {
  private readonly log = new Logger('AuditTrail');

  constructor(
    private readonly trail: AuditTrail,
    private readonly adminAuth: AdminAuth,
    @Optional() @Inject(CLOCK) private readonly clock: Clock = systemClock,
    @Optional() reloads?: ConfigReloadService,
  ) {
    reloads?.observeSignalReloads((event) => this.signalReload(event));
  }

  /** Who sent `req` and from where; the actor is null before the admin guard has authenticated it. */
  originOf(req: FastifyRequest): AuditOrigin {
    const actor = adminActorOf(req);
    return {
      actor: actor ? { kind: actor.kind, subject: actor.subject, ...(actor.name ? { name: actor.name } : {}) } : null,
      role: actor?.role ?? null,
      sourceAddress: this.adminAuth.limiter.clientKey(req.raw?.socket?.remoteAddress, req.headers),
      correlationId: correlationIdOf(req) || null,
    };
  }

  /** Appends the row; resolves once it is stored (rejects when it cannot be). */
  record(origin: AuditOrigin, row: AdminActionRow): Promise<void> {
    return this.trail.recordDurably(this.entry(origin, row));
  }

  private entry(origin: AuditOrigin, row: AdminActionRow): AuditEntry {
    return {
      ...origin,
      at: this.clock.now(),
      operation: ADMIN_OPERATION,
      action: row.action,
      targetId: row.targetId,
      summary: row.summary,
      modelId: null,
      scope: null,
      target: {},
      workers: [],
      signers: null,
      nonce: null,
      adminIdentity: null,
      outcome: row.outcome,
      status: row.status,
      errorCode: row.errorCode ?? null,
      error: row.error ?? null,
      taskId: null,
    };
  }

  private async signalReload(event: SignalReload): Promise<void> {
    const refused = event.problems !== undefined || event.error !== undefined;
    const summary = event.result
      ? summaryOf({ trigger: event.trigger, ...reloadSummary(event.result) })
      : summaryOf({ trigger: event.trigger, problems: event.problems?.length ?? 0 });
    await this.record(SIGHUP_ORIGIN, {
      action: 'config.reload',
      targetId: 'config',
      outcome: refused ? (event.problems ? 'refused' : 'failed') : 'completed',
      status: refused ? (event.problems ? 400 : 500) : 200,
      errorCode: event.problems ? 'invalid_request' : event.error ? 'internal_error' : null,
      error: event.problems ? `Configuration reload refused (${event.problems.length} problems)` : event.error ? 'Internal error' : null,
      summary,
    }).catch((e: unknown) => this.log.error(`audit row of a ${event.trigger} reload not written: ${(e as Error).message}`));
  }
}
