import { Controller, Get, HttpCode, Post, Req, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError, statusOf } from '../common/gateway-error';
import { errorBody } from '../common/error-dialect';
import { cookieValue } from './sso-sessions';
import { CSRF_HEADER, LOGIN_COOKIE, LOGIN_STATE_TTL_MS, SESSION_COOKIE, SsoService } from './sso.service';

const NO_STORE = { 'cache-control': 'no-store', 'referrer-policy': 'no-referrer', 'x-content-type-options': 'nosniff' };

/**
 * The dashboard's single sign-on (docs/enterprise.md#single-sign-on): `GET /auth/login` sends the
 * browser to the provider, `GET /auth/callback` opens the session, `GET /auth/session` tells the page
 * who is signed in (and the CSRF token its mutating calls echo), `POST /auth/logout` ends it.
 */
@ApiExcludeController() // the browser's sign-in, not part of the admin API the OpenAPI document describes
@Controller('auth')
export class SsoController {
  constructor(private readonly sso: SsoService) {}

  @Get('login')
  async login(@Res() reply: FastifyReply): Promise<void> {
    if (!this.sso.enabled) return this.refuse(reply, new GatewayError('not_found', 'Single sign-on is not configured'));
    const { url, stateCookie } = await this.sso.beginLogin();
    // Lax, not Strict: the provider sends the browser back from another site, and the state must come with it.
    reply
      .headers(NO_STORE)
      .header('set-cookie', this.cookie(LOGIN_COOKIE, stateCookie, { sameSite: 'Lax', path: '/auth', maxAgeS: LOGIN_STATE_TTL_MS / 1000 }))
      .redirect(url, 302);
  }

  @Get('callback')
  async callback(@Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    if (!this.sso.enabled) return this.refuse(reply, new GatewayError('not_found', 'Single sign-on is not configured'));
    const clear = this.cookie(LOGIN_COOKIE, '', { sameSite: 'Lax', path: '/auth', maxAgeS: 0 });
    let cookie: string;
    try {
      const url = new URL(req.url, this.sso.redirectOrigin);
      ({ cookie } = await this.sso.finishLogin(url, cookieValue(req.headers.cookie, LOGIN_COOKIE)));
    } catch (e) {
      reply.header('set-cookie', clear);
      return this.refuse(reply, e);
    }
    const session = this.cookie(SESSION_COOKIE, cookie, { sameSite: 'Strict', path: '/', maxAgeS: Math.floor(this.sso.sessionTtlMs / 1000) });
    // A page, not a redirect: a Strict cookie is not sent on a navigation that a cross-site redirect
    // chain started, so the dashboard is loaded by a navigation this (same-site) page makes.
    reply
      .headers({ ...NO_STORE, 'content-security-policy': "default-src 'none'; base-uri 'none'; frame-ancestors 'none'" })
      .header('set-cookie', [clear, session])
      .type('text/html; charset=utf-8')
      .send(
        '<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=/dashboard"><title>Signed in</title><p>Signed in. <a href="/dashboard">Open the dashboard</a></p>\n',
      );
  }

  @Get('session')
  session(@Req() req: FastifyRequest, @Res() reply: FastifyReply): void {
    reply.headers(NO_STORE);
    if (!this.sso.enabled) return void reply.send({ sso: false });
    const s = this.sso.sessions.find(cookieValue(req.headers.cookie, SESSION_COOKIE));
    if (!s) return void reply.send({ sso: true, signed_in: false });
    const { subject, name, role } = s.actor;
    reply.send({ sso: true, signed_in: true, subject, name: name ?? null, role, csrf_token: s.csrf, csrf_header: CSRF_HEADER });
  }

  @Post('logout')
  @HttpCode(204)
  logout(@Req() req: FastifyRequest, @Res() reply: FastifyReply): void {
    const value = cookieValue(req.headers.cookie, SESSION_COOKIE);
    const s = this.sso.sessions.find(value);
    if (s && !this.sso.sessions.csrfMatches(s, headerOf(req.headers[CSRF_HEADER]))) {
      return this.refuse(reply, new GatewayError('forbidden', `Missing or wrong ${CSRF_HEADER} header (CSRF protection of the session cookie)`));
    }
    this.sso.sessions.close(value);
    reply
      .headers(NO_STORE)
      .header('set-cookie', this.cookie(SESSION_COOKIE, '', { sameSite: 'Strict', path: '/', maxAgeS: 0 }))
      .code(204)
      .send();
  }

  private cookie(name: string, value: string, o: { sameSite: 'Lax' | 'Strict'; path: string; maxAgeS: number }): string {
    return `${name}=${encodeURIComponent(value)}; Path=${o.path}; Max-Age=${o.maxAgeS}; HttpOnly; SameSite=${o.sameSite}${this.sso.secureCookies ? '; Secure' : ''}`;
  }

  private refuse(reply: FastifyReply, e: unknown): void {
    const error = e instanceof GatewayError ? e : new GatewayError('internal_error', 'Sign-in failed');
    reply.headers(NO_STORE).code(statusOf(error.code)).send(errorBody('openai', error));
  }
}

function headerOf(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}
