import { Controller, Get, Query, UseGuards } from '@nestjs/common';
import { AdminRole } from '../auth/admin-role';
import { AdminGuard } from '../auth/admin.guard';
import { GatewayError } from '../common/gateway-error';
import { ApiDoc } from '../common/api-doc';
import { LIFECYCLE_API } from '../lifecycle/lifecycle-operations.schemas';
import { AuditRecord } from '../governance/audit-log';
import { parseAuditQuery } from '../governance/audit-query';
import { AuditTrail } from '../governance/audit-trail';

/** Operator API (bearer ADMIN_TOKEN): the audit trail of every admin action (lifecycle operations included), newest first. */
@Controller('admin')
@UseGuards(AdminGuard)
export class AuditController {
  constructor(private readonly trail: AuditTrail) {}

  /** `GET /admin/audit?actor=&action=&target=&operation=&outcome=&model=&task=&since=&until=&before=&limit=` (docs/enterprise.md, docs/lifecycle.md). */
  @Get('audit')
  @AdminRole('viewer')
  @ApiDoc(LIFECYCLE_API.audit)
  async audit(@Query() raw: Record<string, unknown>) {
    const query = parseAuditQuery(raw ?? {});
    if (query instanceof GatewayError) throw query;
    const rows = await this.trail.list(query);
    return {
      object: 'list',
      data: rows.map(describe),
      // The next page: rows older than the last one listed.
      next_before: rows.length === query.limit ? rows[rows.length - 1].id : null,
    };
  }
}

export function describe(r: AuditRecord) {
  return {
    id: r.id,
    at: new Date(r.at).toISOString(),
    action: r.action ?? `lifecycle.${r.operation}`,
    actor: r.actor ? { kind: r.actor.kind, subject: r.actor.subject, name: r.actor.name ?? null } : null,
    role: r.role ?? null,
    source_address: r.sourceAddress ?? null,
    correlation_id: r.correlationId ?? null,
    target_id: r.targetId ?? null,
    summary: r.summary ?? null,
    operation: r.operation,
    model_id: r.modelId,
    scope: r.scope,
    target: {
      pool: r.target.pool ?? null,
      worker_id: r.target.workerId ?? null,
      replicas: r.target.replicas ?? null,
      tenant_id: r.target.tenantId ?? null,
      tag: r.target.tag ?? null,
      evict_model: r.target.evictModel ?? null,
    },
    workers: r.workers,
    signers: r.signers,
    nonce: r.nonce,
    admin_identity: r.adminIdentity,
    outcome: r.outcome,
    status: r.status,
    error_code: r.errorCode,
    error: r.error,
    task_id: r.taskId,
  };
}
