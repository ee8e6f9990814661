import { CallHandler, ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import { firstValueFrom, of, throwError } from 'rxjs';
import { setAdminActor } from '../auth/admin-actor';
import { Errors } from '../common/gateway-error';
import { AdminAudit, AdminActionRow } from './admin-audit';
import { AdminAuditInterceptor, AuditedSpec, AUDITED_METADATA } from './admin-audit.interceptor';
import { AuditOrigin } from './audit-log';

/** A fake AdminAudit: rows are held until the test lets them be stored. */
function fakeAudit() {
  const rows: Array<{ origin: AuditOrigin; row: AdminActionRow }> = [];
  let store: () => void = () => undefined;
  const stored = new Promise<void>((resolve) => (store = resolve));
  const audit = {
    originOf: (req: FastifyRequest) => new AdminAudit({} as never, { limiter: { clientKey: () => '192.0.2.7' } } as never).originOf(req),
    record: (origin: AuditOrigin, row: AdminActionRow) => {
      rows.push({ origin, row });
      return stored;
    },
  } as unknown as AdminAudit;
  return { audit, rows, store: () => store() };
}

function contextOf(req: Partial<FastifyRequest>, spec: AuditedSpec): ExecutionContext {
  const handler = () => undefined;
  Reflect.defineMetadata(AUDITED_METADATA, spec, handler);
  return { getHandler: () => handler, switchToHttp: () => ({ getRequest: () => req }) } as unknown as ExecutionContext;
}

const ssoRequest = () => {
  const req = {
    method: 'PATCH',
    params: { id: 'key-1' },
    query: {},
    body: '{"rpm":5,"secret":"s3cr3t"}',
    headers: {},
    correlationId: 'corr-1',
  } as unknown as FastifyRequest;
  setAdminActor(req, { kind: 'sso', subject: 'user-42', name: 'Ada Lovelace', role: 'operator' });
  return req;
};

describe('AdminAuditInterceptor (@Audited admin routes)', () => {
  it('writes the row of an SSO actor (subject, name, role), address, correlation id, target and a summary without secrets', async () => {
    const { audit, rows, store } = fakeAudit();
    const interceptor = new AdminAuditInterceptor(audit, new Reflector());
    const answer = firstValueFrom(interceptor.intercept(contextOf(ssoRequest(), { action: 'keys.update' }), { handle: () => of({ ok: true }) } as CallHandler));
    store();
    await expect(answer).resolves.toEqual({ ok: true });
    expect(rows).toEqual([
      {
        origin: { actor: { kind: 'sso', subject: 'user-42', name: 'Ada Lovelace' }, role: 'operator', sourceAddress: '192.0.2.7', correlationId: 'corr-1' },
        row: { action: 'keys.update', targetId: 'key-1', summary: { rpm: 5, secret: '[redacted]' }, outcome: 'completed', status: 200 },
      },
    ]);
  });

  it('does not answer before the row is stored', async () => {
    const { audit, rows, store } = fakeAudit();
    const interceptor = new AdminAuditInterceptor(audit, new Reflector());
    let answered = false;
    const answer = firstValueFrom(interceptor.intercept(contextOf(ssoRequest(), { action: 'keys.update' }), { handle: () => of('done') } as CallHandler)).then(
      (v) => ((answered = true), v),
    );
    await new Promise((r) => setImmediate(r));
    expect(rows).toHaveLength(1);
    expect(answered).toBe(false);
    store();
    await expect(answer).resolves.toBe('done');
  });

  it('a refused call gets its row (status, code) and its error still reaches the caller', async () => {
    const { audit, rows, store } = fakeAudit();
    store();
    const interceptor = new AdminAuditInterceptor(audit, new Reflector());
    const error = Errors.notFound('API key', 'key-1');
    const answer = firstValueFrom(
      interceptor.intercept(contextOf(ssoRequest(), { action: 'keys.update' }), { handle: () => throwError(() => error) } as CallHandler),
    );
    await expect(answer).rejects.toBe(error);
    expect(rows[0].row).toMatchObject({ action: 'keys.update', targetId: 'key-1', outcome: 'refused', status: 404, errorCode: 'not_found' });
  });

  it('a row that cannot be stored turns the answer into an error', async () => {
    const audit = { originOf: () => ({}), record: () => Promise.reject(new Error('disk full')) } as unknown as AdminAudit;
    const interceptor = new AdminAuditInterceptor(audit, new Reflector());
    const answer = firstValueFrom(interceptor.intercept(contextOf(ssoRequest(), { action: 'keys.update' }), { handle: () => of('done') } as CallHandler));
    await expect(answer).rejects.toThrow('disk full');
  });

  it('leaves a route without @Audited alone', async () => {
    const { audit, rows } = fakeAudit();
    const interceptor = new AdminAuditInterceptor(audit, new Reflector());
    const context = { getHandler: () => () => undefined } as unknown as ExecutionContext;
    await expect(firstValueFrom(interceptor.intercept(context, { handle: () => of(1) } as CallHandler))).resolves.toBe(1);
    expect(rows).toEqual([]);
  });
});
