import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { HTTP_CODE_METADATA } from '@nestjs/common/constants';
import { Reflector } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import { catchError, from, map, mergeMap, Observable, throwError } from 'rxjs';
import { AdminAudit } from './admin-audit';
import { bodyObject, errorOutcome, summaryOf } from './admin-audit-row';

export const AUDITED_METADATA = 'switchboard:audited';

/** What an audited route gives its summary and target functions. */
export interface AuditedCall {
  params: Record<string, string>;
  query: Record<string, unknown>;
  /** The request body as an object (undefined when it is not a JSON object). */
  body: Record<string, unknown> | undefined;
  /** The answer; undefined when the route failed. */
  result: unknown;
}

export interface AuditedSpec {
  action: string;
  /** The target id; default: the route's `:id` or `:name`. */
  target?: (call: AuditedCall) => string | undefined;
  /** What changed (secrets are redacted after it); default: the body and the query string. */
  summary?: (call: AuditedCall) => Record<string, unknown> | undefined;
}

/**
 * Writes the audit row of an `@Audited` admin route before the answer leaves: after the handler
 * has run (or failed), the answer waits until the row is stored; a row that cannot be stored turns
 * the answer into an error. Runs after the admin guard, so the actor is known; a request the guard
 * refused never reaches it (those are the unauthenticated refusals, not admin actions).
 */
@Injectable()
export class AdminAuditInterceptor implements NestInterceptor {
  constructor(
    private readonly audit: AdminAudit,
    private readonly reflector: Reflector,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const spec = this.reflector.get<AuditedSpec | undefined>(AUDITED_METADATA, context.getHandler());
    if (!spec) return next.handle();
    const req = context.switchToHttp().getRequest<FastifyRequest>();
    const origin = this.audit.originOf(req);
    const call = (result: unknown): AuditedCall => ({
      params: (req.params ?? {}) as Record<string, string>,
      query: (req.query ?? {}) as Record<string, unknown>,
      body: bodyObject(req.body),
      result,
    });
    const successStatus = this.reflector.get<number | undefined>(HTTP_CODE_METADATA, context.getHandler()) ?? (req.method === 'POST' ? 201 : 200);
    return next.handle().pipe(
      catchError((error: unknown) => {
        const { status, code, message } = errorOutcome(error);
        const row = {
          ...rowOf(spec, call(undefined)),
          outcome: status >= 500 ? ('failed' as const) : ('refused' as const),
          status,
          errorCode: code,
          error: message,
        };
        return from(this.audit.record(origin, row)).pipe(mergeMap(() => throwError(() => error)));
      }),
      mergeMap((result: unknown) =>
        from(this.audit.record(origin, { ...rowOf(spec, call(result)), outcome: 'completed', status: successStatus })).pipe(map(() => result)),
      ),
    );
  }
}

function rowOf(spec: AuditedSpec, call: AuditedCall) {
  const target = spec.target ? spec.target(call) : (call.params.id ?? call.params.name);
  const query = Object.keys(call.query).length > 0 ? { query: call.query } : {};
  const summary = spec.summary ? spec.summary(call) : call.body || Object.keys(query).length ? { ...call.body, ...query } : undefined;
  return { action: spec.action, targetId: target === undefined ? null : String(target).slice(0, 255), summary: summaryOf(summary) };
}
