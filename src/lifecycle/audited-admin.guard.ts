import { CanActivate, ExecutionContext, Inject, Injectable, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import { AdminAuth } from '../auth/admin-auth';
import { AdminGuard } from '../auth/admin.guard';
import { CLOCK, Clock } from '../common/clock';
import { AuditTrail } from '../governance/audit-trail';
import { adminIdentity } from '../governance/governance.service';
import { LifecycleOperation } from '../governance/op-token';
import { AuditContext } from './audit-context';

const OPERATION = 'switchboard:lifecycle-operation';

/** Marks a route as a governed lifecycle operation: its refusals are audited, the admin token's too. */
export const GovernedOperation = (operation: LifecycleOperation) => SetMetadata(OPERATION, operation);

/**
 * The admin guard of the lifecycle routes: the usual admin token check, and on a governed
 * operation a refusal (401/403/429) goes to the audit trail with a fingerprint of the presented token,
 * aggregated per client address and minute (a flood of them is one row a minute per address).
 */
@Injectable()
export class AuditedAdminGuard implements CanActivate {
  constructor(
    private readonly admin: AdminGuard,
    private readonly adminAuth: AdminAuth,
    private readonly reflector: Reflector,
    private readonly trail: AuditTrail,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    try {
      // The admin guard sets the request's actor (token, SSO session or access token) and checks the route's role.
      return await this.admin.canActivate(context);
    } catch (e) {
      const operation = this.reflector.get<LifecycleOperation | undefined>(OPERATION, context.getHandler());
      if (operation) {
        const req = context.switchToHttp().getRequest<FastifyRequest>();
        const address = this.adminAuth.limiter.clientKey(req.raw?.socket?.remoteAddress, req.headers);
        const origin = { sourceAddress: address }; // aggregated per address: no one request's correlation id
        this.trail.recordUnauthenticated(new AuditContext(operation, adminIdentity(req.headers.authorization), origin).refusal(this.clock.now(), e), address);
      }
      throw e;
    }
  }
}
