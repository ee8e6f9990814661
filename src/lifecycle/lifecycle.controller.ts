import { Body, Controller, Get, HttpCode, Inject, Param, Post, Req, UseGuards } from '@nestjs/common';
import { AdminRole } from '../auth/admin-role';
import type { FastifyRequest } from 'fastify';
import { CLOCK, Clock } from '../common/clock';
import { AdminAudit } from '../governance/admin-audit';
import { AuditTrail } from '../governance/audit-trail';
import { adminIdentity } from '../governance/governance.service';
import { LifecycleOperation } from '../governance/op-token';
import { OpTokenVerifier } from '../governance/op-token-verifier';
import { ApiDoc } from '../common/api-doc';
import { LIFECYCLE_API } from './lifecycle-operations.schemas';
import { AuditContext } from './audit-context';
import { AuditedAdminGuard, GovernedOperation } from './audited-admin.guard';
import { parseFlushBody, parseLoadBody, parseUnloadBody } from './lifecycle.dto';
import { LifecycleService } from './lifecycle.service';

/**
 * Governed model lifecycle (runner API §2–§4), relayed to workers: admin token and a
 * `verifiedOpToken` signed by M of the N governance signers. Every operation, accepted or
 * refused, is audited (`GET /admin/audit`). See docs/lifecycle.md.
 */
@Controller('v1')
@UseGuards(AuditedAdminGuard)
export class LifecycleController {
  constructor(
    private readonly lifecycle: LifecycleService,
    private readonly trail: AuditTrail,
    @Inject(CLOCK) private readonly clock: Clock,
    private readonly adminAudit: AdminAudit,
  ) {}

  /** 202 `{taskId, status: "loading", progress, eta, modelId, workers}`; poll `GET /v1/models/load/:taskId`. */
  @Post('models/load')
  @GovernedOperation('model-load')
  @AdminRole('operator')
  @ApiDoc(LIFECYCLE_API.load)
  @HttpCode(202)
  load(@Req() req: FastifyRequest, @Body() body: unknown) {
    return this.governed('model-load', req, body, (audit) => this.lifecycle.load(parseLoadBody(body), audit));
  }

  @Get('models/load/:taskId')
  @AdminRole('viewer')
  @ApiDoc(LIFECYCLE_API.loadTask)
  loadTask(@Param('taskId') taskId: string) {
    this.lifecycle.requireEnabled();
    return this.lifecycle.loadTask(taskId);
  }

  /** Answers once every worker serving the model has drained it and unloaded it. */
  @Post('models/unload')
  @GovernedOperation('model-unload')
  @AdminRole('operator')
  @ApiDoc(LIFECYCLE_API.unload)
  @HttpCode(200)
  unload(@Req() req: FastifyRequest, @Body() body: unknown) {
    return this.governed('model-unload', req, body, (audit) => this.lifecycle.unload(parseUnloadBody(body), audit));
  }

  @Post('cache/flush')
  @GovernedOperation('cache-flush')
  @AdminRole('operator')
  @ApiDoc(LIFECYCLE_API.flush)
  @HttpCode(200)
  flush(@Req() req: FastifyRequest, @Body() body: unknown) {
    return this.governed('cache-flush', req, body, (audit) => this.lifecycle.flush(parseFlushBody(body), audit));
  }

  /** Runs one operation; a refusal (any error before the operation was sent) gets its audit row. */
  private async governed<T>(operation: LifecycleOperation, req: FastifyRequest, body: unknown, run: (audit: AuditContext) => Promise<T>): Promise<T> {
    const audit = new AuditContext(operation, adminIdentity(req.headers.authorization), this.adminAudit.originOf(req));
    try {
      audit.fromRawBody(body, OpTokenVerifier.peek);
      this.lifecycle.requireEnabled();
      return await run(audit);
    } catch (e) {
      if (!audit.recorded) this.trail.record(audit.refusal(this.clock.now(), e));
      throw e;
    }
  }
}
