import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import { GatewayError } from '../common/gateway-error';
import { AdminAuth } from './admin-auth';
import { AdminRole, roleAllows, setAdminActor } from './admin-actor';
import { ADMIN_ROLE_KEY } from './admin-role';

/**
 * Admin routes: `Authorization: Bearer <ADMIN_TOKEN>`, a bearer access token of the OIDC issuer, or
 * the dashboard's SSO session (see AdminAuth). Without a configured token or SSO they answer 403;
 * failed attempts are limited per address. The authenticated actor is set on the request
 * (admin-actor.ts), then the route's `@AdminRole` is enforced: below it, 403 `forbidden`.
 */
@Injectable()
export class AdminGuard implements CanActivate {
  constructor(
    private readonly auth: AdminAuth,
    private readonly reflector: Reflector,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    const actor = await this.auth.authenticate(request);
    setAdminActor(request, actor);
    const required = this.reflector.getAllAndOverride<AdminRole | undefined>(ADMIN_ROLE_KEY, [context.getHandler(), context.getClass()]) ?? 'admin';
    if (!roleAllows(actor.role, required)) {
      throw new GatewayError('forbidden', `This route needs the ${required} role; ${actor.name ?? actor.subject} has ${actor.role}`);
    }
    return true;
  }
}
