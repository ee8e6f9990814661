import { Inject, Injectable, Logger } from '@nestjs/common';
import type { JWTVerifyGetKey } from 'jose';
import type { Configuration } from 'openid-client';
import { APP_CONFIG, AppConfig } from '../config';
import type { OidcConfig } from '../config/sections/auth';
import { CLOCK, Clock } from '../common/clock';
import { GatewayError } from '../common/gateway-error';
import type { AdminActor } from './admin-actor';
import { loadJose, loadOpenIdClient } from './esm';
import { ssoActor } from './role-mapping';
import { SsoSessions } from './sso-sessions';

export const SESSION_COOKIE = 'switchboard_session';
export const LOGIN_COOKIE = 'switchboard_login';
export const CSRF_HEADER = 'x-csrf-token';
/** How long a sign-in may take at the provider before its state cookie is worthless. */
export const LOGIN_STATE_TTL_MS = 10 * 60_000;
/** Least time between two JWKS fetches caused by an unknown key id (a rotation), and how long a fetched set is trusted. */
const JWKS_COOLDOWN_MS = 1_000;
const JWKS_MAX_AGE_MS = 10 * 60_000;

interface LoginState {
  v: string;
  s: string;
  n: string;
  exp: number;
}

/**
 * Single sign-on against one OpenID Connect issuer (issue 21): the dashboard's authorization-code
 * login with PKCE (openid-client), its server-side sessions, and the admin API's bearer access
 * tokens verified against the issuer's JWKS (jose; the key set is cached and fetched again when a
 * token names a key it lacks, so the provider may rotate keys). The issuer's discovery document is
 * fetched on first use and again after a failure, so a provider that is down at boot stops nothing.
 */
@Injectable()
export class SsoService {
  private readonly log = new Logger('Sso');
  private readonly config: OidcConfig | undefined;
  readonly sessions: SsoSessions;
  private discovered: Promise<{ client: Configuration; jwks: JWTVerifyGetKey }> | undefined;

  constructor(
    @Inject(APP_CONFIG) app: AppConfig,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {
    this.config = app.oidc;
    this.sessions = new SsoSessions(this.config?.sessionTtlMs ?? 3600_000, () => clock.now());
  }

  get enabled(): boolean {
    return this.config !== undefined;
  }

  /** Whether the session cookie may be `Secure`: the browser reaches the gateway over https. */
  get secureCookies(): boolean {
    return this.config?.redirectUrl.startsWith('https://') ?? false;
  }

  /** The gateway's origin as browsers reach it (the callback URL's). */
  get redirectOrigin(): string {
    return this.config ? new URL(this.config.redirectUrl).origin : 'http://localhost';
  }

  get sessionTtlMs(): number {
    return this.config?.sessionTtlMs ?? 0;
  }

  /** The actor of a bearer access token of the issuer; throws 401 for a bad or expired token, 403 without a role. */
  async verifyBearer(token: string): Promise<AdminActor> {
    const config = this.required();
    const { jwks } = await this.discover();
    let claims: Record<string, unknown>;
    try {
      const verified = await loadJose().jwtVerify(token, jwks, {
        issuer: config.issuer,
        ...(config.audience ? { audience: config.audience } : {}),
      });
      claims = verified.payload as Record<string, unknown>;
    } catch (e) {
      throw new GatewayError('unauthorized', `Invalid access token: ${(e as { code?: string }).code ?? 'unverifiable'}`);
    }
    return this.actorOf(claims);
  }

  /** Starts a sign-in: the provider URL to send the browser to, and the signed login-state cookie value. */
  async beginLogin(): Promise<{ url: string; stateCookie: string }> {
    const config = this.required();
    const oc = loadOpenIdClient();
    const { client } = await this.discover();
    const verifier = oc.randomPKCECodeVerifier();
    const state: LoginState = { v: verifier, s: oc.randomState(), n: oc.randomNonce(), exp: this.clock.now() + LOGIN_STATE_TTL_MS };
    const url = oc.buildAuthorizationUrl(client, {
      redirect_uri: config.redirectUrl,
      scope: 'openid profile email',
      code_challenge: await oc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state: state.s,
      nonce: state.n,
    });
    return { url: url.href, stateCookie: this.sessions.sign(Buffer.from(JSON.stringify(state)).toString('base64url')) };
  }

  /**
   * Ends a sign-in at the callback: checks state, nonce and PKCE, exchanges the code, maps the
   * user's claims (ID token, then userinfo when the roles claim is not in it) to a role and opens a
   * session. Throws 401 for a bad or stale callback, 403 for a user without a role.
   */
  async finishLogin(callbackUrl: URL, stateCookie: string | undefined): Promise<{ actor: AdminActor; cookie: string }> {
    const config = this.required();
    const state = this.loginState(stateCookie);
    const oc = loadOpenIdClient();
    const { client } = await this.discover();
    let claims: Record<string, unknown>;
    let accessToken: string;
    try {
      const tokens = await oc.authorizationCodeGrant(client, callbackUrl, {
        pkceCodeVerifier: state.v,
        expectedState: state.s,
        expectedNonce: state.n,
        idTokenExpected: true,
      });
      claims = { ...(tokens.claims() ?? {}) } as Record<string, unknown>;
      accessToken = tokens.access_token;
    } catch (e) {
      this.log.warn(`sign-in refused: ${(e as Error).message}`);
      throw new GatewayError('unauthorized', 'Sign-in failed: the provider answer did not verify');
    }
    if (claims[config.rolesClaim] === undefined && !config.rolesClaim.includes('.')) {
      const info = await oc.fetchUserInfo(client, accessToken, claims.sub as string).catch(() => undefined);
      if (info) claims = { ...info, ...claims, [config.rolesClaim]: info[config.rolesClaim] };
    }
    const actor = this.actorOf(claims);
    return { actor, cookie: this.sessions.open(actor).cookie };
  }

  private actorOf(claims: Record<string, unknown>): AdminActor {
    const actor = ssoActor(this.required(), claims);
    if (!actor) throw new GatewayError('forbidden', `No role is granted to this user (claim '${this.required().rolesClaim}')`);
    return actor;
  }

  private loginState(cookie: string | undefined): LoginState {
    const raw = this.sessions.unsign(cookie);
    let state: LoginState | undefined;
    try {
      state = raw ? (JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as LoginState) : undefined;
    } catch {
      state = undefined;
    }
    if (!state || typeof state.v !== 'string' || !(state.exp > this.clock.now())) {
      throw new GatewayError('unauthorized', 'Sign-in failed: no valid login state (cookies off, or the sign-in took too long): sign in again');
    }
    return state;
  }

  private required(): OidcConfig {
    if (!this.config) throw new GatewayError('not_found', 'Single sign-on is not configured');
    return this.config;
  }

  private discover(): Promise<{ client: Configuration; jwks: JWTVerifyGetKey }> {
    this.discovered ??= this.fetchDiscovery().catch((e: unknown) => {
      this.discovered = undefined;
      this.log.warn(`OIDC discovery of ${this.config?.issuer} failed: ${(e as Error).message}`);
      throw new GatewayError('dependency_unavailable', 'The identity provider cannot be reached');
    });
    return this.discovered;
  }

  private async fetchDiscovery(): Promise<{ client: Configuration; jwks: JWTVerifyGetKey }> {
    const config = this.required();
    const oc = loadOpenIdClient();
    const insecure = config.issuer.startsWith('http://');
    const auth = config.clientSecret ? oc.ClientSecretPost(config.clientSecret) : oc.None();
    const client = await oc.discovery(new URL(config.issuer), config.clientId, undefined, auth, insecure ? { execute: [oc.allowInsecureRequests] } : undefined);
    const jwksUri = client.serverMetadata().jwks_uri;
    if (!jwksUri) throw new Error('the discovery document names no jwks_uri');
    const jwks = loadJose().createRemoteJWKSet(new URL(jwksUri), { cooldownDuration: JWKS_COOLDOWN_MS, cacheMaxAge: JWKS_MAX_AGE_MS });
    return { client, jwks };
  }
}
