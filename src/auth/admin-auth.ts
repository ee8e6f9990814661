import { Inject, Injectable, Logger, OnModuleDestroy, Optional } from '@nestjs/common';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { APP_CONFIG, AppConfig } from '../config';
import { CLOCK, Clock } from '../common/clock';
import { Errors, GatewayError } from '../common/gateway-error';
import { MetricsService } from '../observability/metrics.service';
import { FailedAuthLimiter } from './failed-auth-limiter';
import type { AdminActor } from './admin-actor';
import { CSRF_HEADER, SESSION_COOKIE, SsoService } from './sso.service';
import { cookieValue } from './sso-sessions';

/** Below this length an admin token is guessable enough to warn about at startup. */
export const MIN_ADMIN_TOKEN_LENGTH = 24;
const MINUTE_MS = 60_000;

/**
 * The admin token check, shared by every module's AdminGuard (Nest builds one guard per module;
 * the failure counts must be one per gateway). Failures are limited per client address:
 * `ADMIN_AUTH_FAILURE_LIMIT` wrong tokens within a minute block that address for a minute (the
 * 11th attempt with the default 10 is refused).
 *
 * While an address is blocked, even the right token from it is refused (429): the admin token may
 * be a human-chosen string, and a limiter that still said "yes" to the right guess would not slow a
 * guesser at all. The right token from any other address is never refused, so one noisy address (or
 * every client behind an untrusted proxy) cannot lock the operator out from elsewhere.
 */
@Injectable()
export class AdminAuth implements OnModuleDestroy {
  private readonly log = new Logger('AdminAuth');
  private readonly expected: Buffer | undefined;
  readonly limiter: FailedAuthLimiter;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    @Inject(CLOCK) clock: Clock,
    @Optional() private readonly metrics?: MetricsService,
    @Optional() private readonly sso?: SsoService,
  ) {
    this.expected = config.adminToken ? digest(config.adminToken) : undefined;
    const limit = config.adminAuthFailureLimit ?? 10;
    this.limiter = new FailedAuthLimiter(
      { maxFailures: limit, windowMs: MINUTE_MS, blockMs: MINUTE_MS, trustedProxies: config.authLimiter?.trustedProxies ?? [] },
      clock,
    );
    if (config.adminToken && config.adminToken.length < MIN_ADMIN_TOKEN_LENGTH) {
      this.log.warn(
        `ADMIN_TOKEN is ${config.adminToken.length} characters long: use at least ${MIN_ADMIN_TOKEN_LENGTH} random characters (e.g. openssl rand -base64 32)`,
      );
    }
  }

  onModuleDestroy(): void {
    this.limiter.stop();
  }

  /**
   * Authenticates an admin request and returns who it acts as; throws the refusal (403 when neither
   * a token nor single sign-on is configured, 429 while throttled, else 401 — 403 for an SSO user
   * without a role or a cookie call without its CSRF token).
   *
   * Accepted: `Authorization: Bearer <ADMIN_TOKEN>` (the break-glass admin), a bearer JWT access
   * token of the configured OIDC issuer, or the dashboard's SSO session cookie (then a mutating
   * method must echo the session's CSRF token in `x-csrf-token`).
   */
  async authenticate(req: FastifyRequest): Promise<AdminActor> {
    const sso = this.sso?.enabled ? this.sso : undefined;
    if (!this.expected && !sso) {
      this.metrics?.auth.adminFailure('disabled');
      throw new GatewayError('forbidden', 'Admin API is disabled: no admin token is configured');
    }
    const client = this.limiter.clientKey(req.raw?.socket?.remoteAddress, req.headers);
    if (this.limiter.isBlocked(client)) {
      this.metrics?.auth.adminFailure('rate_limited');
      throw Errors.adminAuthRateLimited(MINUTE_MS);
    }
    const m = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? '');
    const presented = m?.[1].trim();
    // Comparing digests keeps the comparison constant-time whatever the presented length.
    if (presented !== undefined && this.expected && timingSafeEqual(digest(presented), this.expected)) return ADMIN_TOKEN_ACTOR;
    if (presented !== undefined && sso && JWT_SHAPE.test(presented)) {
      try {
        return await sso.verifyBearer(presented);
      } catch (e) {
        if (e instanceof GatewayError && e.code === 'unauthorized') this.limiter.recordFailure(client);
        this.metrics?.auth.adminFailure('invalid');
        throw e;
      }
    }
    if (presented === undefined && sso) {
      const session = sso.sessions.find(cookieValue(req.headers.cookie, SESSION_COOKIE));
      if (session) {
        // The cookie rides along on any request the browser makes to us, so a call that changes
        // something must also prove it comes from our page: the token only the page can read.
        if (!SAFE_METHODS.has(req.method) && !sso.sessions.csrfMatches(session, headerValue(req.headers[CSRF_HEADER]))) {
          this.metrics?.auth.adminFailure('invalid');
          throw new GatewayError('forbidden', `Missing or wrong ${CSRF_HEADER} header (CSRF protection of the session cookie)`);
        }
        return session.actor;
      }
    }
    // Only a wrong token is a guess; a request without one (a misconfigured client, a browser
    // before sign-in) is refused without counting, so it cannot lock out its address.
    if (m) this.limiter.recordFailure(client);
    this.metrics?.auth.adminFailure(m ? 'invalid' : 'missing');
    throw new GatewayError('unauthorized', 'Invalid or missing admin token');
  }
}

const ADMIN_TOKEN_ACTOR: AdminActor = Object.freeze({ kind: 'admin-token', subject: 'admin-token', role: 'admin' });
/** Three base64url parts: a JWS compact serialization (an access token), never the admin token's business. */
const JWT_SHAPE = /^[\w-]+\.[\w-]+\.[\w-]+$/;
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

function headerValue(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}
