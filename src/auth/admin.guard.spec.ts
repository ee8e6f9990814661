import { ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { FakeClock } from '../../test/support/fake-clock';
import { AppConfig } from '../config';
import { GatewayError } from '../common/gateway-error';
import { AdminActor, adminActorOf } from './admin-actor';
import { AdminAuth } from './admin-auth';
import { AdminRole } from './admin-role';
import { AdminGuard } from './admin.guard';
import { SsoSessions } from './sso-sessions';
import type { SsoService } from './sso.service';

class Routes {
  @AdminRole('viewer')
  read(): void {}
  @AdminRole('operator')
  drain(): void {}
  undeclared(): void {}
}

const vera: AdminActor = { kind: 'sso', subject: 'u-vera', name: 'Vera', role: 'viewer' };
const oscar: AdminActor = { kind: 'sso', subject: 'u-oscar', name: 'Oscar', role: 'operator' };

function setup() {
  const clock = new FakeClock(1_000);
  const sessions = new SsoSessions(60_000, () => clock.now());
  const sso = { enabled: true, sessions, verifyBearer: async (t: string) => (t === 'a.b.c' ? oscar : Promise.reject(new GatewayError('unauthorized', 'bad'))) };
  const auth = new AdminAuth({ adminToken: 'the-admin-token-of-this-test' } as AppConfig, clock, undefined, sso as unknown as SsoService);
  const guard = new AdminGuard(auth, new Reflector());
  const run = async (handler: keyof Routes, method: string, headers: Record<string, string>) => {
    const request = { method, headers };
    const context = {
      getHandler: () => Routes.prototype[handler],
      getClass: () => Routes,
      switchToHttp: () => ({ getRequest: () => request }),
    } as unknown as ExecutionContext;
    try {
      await guard.canActivate(context);
      return { actor: adminActorOf(request as never) };
    } catch (e) {
      return { refused: (e as GatewayError).code, actor: adminActorOf(request as never) };
    }
  };
  return { sessions, run };
}

describe('AdminGuard (issue 21 roles)', () => {
  it('sets the actor of the break-glass token, an access token and a session cookie on the request (what the audit trail reads)', async () => {
    const { sessions, run } = setup();
    expect(await run('drain', 'POST', { authorization: 'Bearer the-admin-token-of-this-test' })).toEqual({
      actor: { kind: 'admin-token', subject: 'admin-token', role: 'admin' },
    });
    expect(await run('drain', 'POST', { authorization: 'Bearer a.b.c' })).toEqual({ actor: oscar });
    const { cookie } = sessions.open(vera);
    expect(await run('read', 'GET', { cookie: `switchboard_session=${cookie}` })).toEqual({ actor: vera });
  });

  it('refuses a role below the route’s with 403 forbidden, and needs admin where a route declares nothing', async () => {
    const { run } = setup();
    expect((await run('drain', 'POST', { authorization: 'Bearer a.b.c' })).refused).toBeUndefined();
    expect((await run('undeclared', 'GET', { authorization: 'Bearer a.b.c' })).refused).toBe('forbidden');
    expect((await run('undeclared', 'GET', { authorization: 'Bearer the-admin-token-of-this-test' })).refused).toBeUndefined();
    expect((await run('read', 'GET', { authorization: 'Bearer x.y.z' })).refused).toBe('unauthorized');
  });

  it('refuses a mutating call made with the session cookie unless it echoes the session’s CSRF token', async () => {
    const { sessions, run } = setup();
    const { cookie, csrf } = sessions.open(oscar);
    expect((await run('drain', 'POST', { cookie: `switchboard_session=${cookie}` })).refused).toBe('forbidden');
    expect((await run('drain', 'POST', { cookie: `switchboard_session=${cookie}`, 'x-csrf-token': 'guess' })).refused).toBe('forbidden');
    expect(await run('drain', 'POST', { cookie: `switchboard_session=${cookie}`, 'x-csrf-token': csrf })).toEqual({ actor: oscar });
    sessions.close(cookie);
    expect((await run('read', 'GET', { cookie: `switchboard_session=${cookie}` })).refused).toBe('unauthorized');
  });
});
