import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { APP_CONFIG, AppConfig } from '../config';
import { GatewayError } from '../common/gateway-error';

/** Admin routes: `Authorization: Bearer <ADMIN_TOKEN>`. Without a configured token they answer 403. */
@Injectable()
export class AdminGuard implements CanActivate {
  private readonly expected: Buffer | undefined;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.expected = config.adminToken ? digest(config.adminToken) : undefined;
  }

  canActivate(context: ExecutionContext): boolean {
    if (!this.expected) throw new GatewayError('forbidden', 'Admin API is disabled: no admin token is configured');
    const header = context.switchToHttp().getRequest<FastifyRequest>().headers.authorization ?? '';
    const m = /^Bearer\s+(.+)$/i.exec(header);
    // Comparing digests keeps the comparison constant-time whatever the presented length.
    if (!m || !timingSafeEqual(digest(m[1].trim()), this.expected)) {
      throw new GatewayError('unauthorized', 'Invalid or missing admin token');
    }
    return true;
  }
}

function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}
