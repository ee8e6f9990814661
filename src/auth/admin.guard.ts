import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { AdminAuth } from './admin-auth';

/**
 * Admin routes: `Authorization: Bearer <ADMIN_TOKEN>`. Without a configured token they answer 403;
 * failed attempts are limited per address (see AdminAuth).
 */
@Injectable()
export class AdminGuard implements CanActivate {
  constructor(private readonly auth: AdminAuth) {}

  canActivate(context: ExecutionContext): boolean {
    this.auth.check(context.switchToHttp().getRequest<FastifyRequest>());
    return true;
  }
}
