import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { AdminAuth } from './admin-auth';
import { setAdminActor } from './admin-actor';

/**
 * Admin routes: `Authorization: Bearer <ADMIN_TOKEN>`. Without a configured token they answer 403;
 * failed attempts are limited per address (see AdminAuth).
 */
@Injectable()
export class AdminGuard implements CanActivate {
  constructor(private readonly auth: AdminAuth) {}

  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    this.auth.check(request);
    // Only the break-glass token exists so far: it acts as admin (see admin-actor.ts).
    setAdminActor(request, { kind: 'admin-token', subject: 'admin-token', role: 'admin' });
    return true;
  }
}
