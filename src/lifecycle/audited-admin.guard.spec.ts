import { Logger } from '@nestjs/common';
import { ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { FakeClock } from '../../test/support/fake-clock';
import { AdminAuth } from '../auth/admin-auth';
import { AdminGuard } from '../auth/admin.guard';
import { AppConfig } from '../config';
import { ADMIN_TOKEN_REFUSAL_CODES, AuditEntry, AuditLog, AuditQuery, AuditRecord } from '../governance/audit-log';
import { AuditTrail } from '../governance/audit-trail';
import { AuditContext } from './audit-context';
import { AuditedAdminGuard, GovernedOperation } from './audited-admin.guard';

/** An audit table whose inserts wait until `open()`: a database that is slow, or down for a while. */
class SlowAuditLog extends AuditLog {
  readonly rows: AuditEntry[] = [];
  private gate!: () => void;
  private readonly opened = new Promise<void>((resolve) => (this.gate = resolve));
  open(): void {
    this.gate();
  }
  async append(entry: AuditEntry): Promise<void> {
    await this.opened;
    this.rows.push(entry);
  }
  async list(_query: AuditQuery): Promise<AuditRecord[]> {
    return this.rows.map((r, i) => ({ ...r, id: i + 1 }));
  }
  async deleteBefore(): Promise<number> {
    return 0;
  }
}

class Routes {
  @GovernedOperation('model-unload')
  unload(): void {}
}

describe('AuditedAdminGuard', () => {
  it("a flood of requests without the admin token never crowds the admin's own operations out of the audit trail", async () => {
    jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const store = new SlowAuditLog();
    const trail = new AuditTrail(store);
    const clock = new FakeClock(1_000);
    const auth = new AdminAuth({ adminToken: 'the-admin-token', adminAuthFailureLimit: 1_000_000 } as AppConfig, clock);
    const guard = new AuditedAdminGuard(new AdminGuard(auth, new Reflector()), auth, new Reflector(), trail, clock);
    const context = {
      getHandler: () => Routes.prototype.unload,
      switchToHttp: () => ({ getRequest: () => ({ headers: { authorization: 'Bearer guessed' } }) }),
    } as unknown as ExecutionContext;

    for (let i = 0; i < 12_000; i++) await expect(guard.canActivate(context)).rejects.toThrow('Invalid or missing admin token');
    const accepted = new AuditContext('model-unload', 'sha256:000000000000');
    accepted.modelId = 'llama3:8b';
    trail.record(accepted.entry(clock.now(), 'accepted', 202));
    store.open();
    await trail.list({ limit: 1 });

    expect(store.rows.filter((r) => r.outcome === 'accepted')).toHaveLength(1);
    const refused = store.rows.filter((r) => r.outcome === 'refused');
    expect(refused.length).toBeGreaterThan(0);
    expect(refused.every((r) => r.errorCode === 'unauthorized' && r.operation === 'model-unload')).toBe(true);
  });

  it('records its refusals (a wrong token; no admin token configured) with the codes the shorter audit retention applies to', async () => {
    const store = new SlowAuditLog();
    store.open();
    const trail = new AuditTrail(store);
    const context = {
      getHandler: () => Routes.prototype.unload,
      switchToHttp: () => ({ getRequest: () => ({ headers: { authorization: 'Bearer guessed' } }) }),
    } as unknown as ExecutionContext;
    for (const adminToken of ['the-admin-token', undefined]) {
      const clock = new FakeClock(1_000);
      const auth = new AdminAuth({ adminToken } as AppConfig, clock);
      const guard = new AuditedAdminGuard(new AdminGuard(auth, new Reflector()), auth, new Reflector(), trail, clock);
      await expect(guard.canActivate(context)).rejects.toThrow();
    }
    await trail.list({ limit: 10 });
    expect(store.rows.map((r) => r.errorCode)).toEqual(['unauthorized', 'forbidden']);
    expect(store.rows.every((r) => ADMIN_TOKEN_REFUSAL_CODES.includes(r.errorCode!))).toBe(true);
  });
});
