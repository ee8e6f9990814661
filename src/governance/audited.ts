import { applyDecorators, SetMetadata, UseInterceptors } from '@nestjs/common';
import { AdminAuditInterceptor, AuditedSpec, AUDITED_METADATA } from './admin-audit.interceptor';

/**
 * Marks a mutating admin route: it writes an audit row (time, actor, role, source address,
 * correlation id, `action`, target, outcome, summary without secrets) before it answers (issue 21).
 * Put it on its own line directly above `@ApiDoc`. `options.target`/`options.summary` override the
 * defaults (the route's `:id`/`:name`; the body and query string, secrets redacted).
 */
export function Audited(action: string, options: Omit<AuditedSpec, 'action'> = {}): MethodDecorator {
  return applyDecorators(SetMetadata(AUDITED_METADATA, { action, ...options } satisfies AuditedSpec), UseInterceptors(AdminAuditInterceptor));
}

/** The metadata `@Audited` set on a handler (the route-table test reads it). */
export function auditedSpecOf(handler: object): AuditedSpec | undefined {
  return Reflect.getMetadata(AUDITED_METADATA, handler) as AuditedSpec | undefined;
}
