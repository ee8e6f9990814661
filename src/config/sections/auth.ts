import { readFileSync } from 'node:fs';
import { Env, Reader } from '../../common/config-reader';
import { custom, envName, group, read, secs, str, yamlKeys } from '../setting';

export type OidcRole = 'viewer' | 'operator' | 'admin';
const ROLES: readonly OidcRole[] = ['viewer', 'operator', 'admin'];

/** The `auth.oidc:` section: single sign-on for the dashboard and JWT bearer tokens for the admin API (docs/enterprise.md#single-sign-on). */
export interface OidcConfig {
  issuer: string;
  clientId: string;
  /** From `client_secret_file` or `OIDC_CLIENT_SECRET`; undefined = a public client (PKCE only). */
  clientSecret: string | undefined;
  /** Where the provider sends the browser back: the gateway's `/auth/callback` as browsers reach it. */
  redirectUrl: string;
  /** The claim holding the user's groups or roles (`groups`, `roles`). */
  rolesClaim: string;
  /** Claim value → role, each role listing the values that grant it (the highest granted wins). */
  roles: Record<OidcRole, string[]>;
  /** When set, a bearer access token must name it in `aud`. */
  audience: string | undefined;
  /** Lifetime of a dashboard session (and the cookie's Max-Age). */
  sessionTtlMs: number;
}

export const OIDC_SETTINGS = group('auth.oidc', 'oidc', {
  issuer: str({
    env: 'OIDC_ISSUER',
    yaml: 'issuer',
    reload: 'restart',
    fields: ['issuer'],
    docDefault: 'none (SSO off)',
    doc: "the OpenID Connect issuer URL (`https://keycloak.example.com/realms/ops`, `https://login.microsoftonline.com/<tenant>/v2.0`); its discovery document and JWKS are fetched from it. Set, the dashboard offers **Sign in** and the admin API accepts the issuer's access tokens ([enterprise.md](enterprise.md#single-sign-on)). an `http://` issuer is for local tests only (its tokens and secrets travel unencrypted)",
  }),
  clientId: str({
    env: 'OIDC_CLIENT_ID',
    yaml: 'client_id',
    reload: 'restart',
    fields: ['clientId'],
    docDefault: 'none',
    doc: 'the client id registered at the provider (required with an issuer)',
  }),
  clientSecretFile: str({
    env: 'OIDC_CLIENT_SECRET_FILE',
    yaml: 'client_secret_file',
    reload: 'restart',
    fields: ['clientSecret'],
    docDefault: 'none',
    doc: 'file holding the client secret (one trailing newline removed); `OIDC_CLIENT_SECRET` gives it inline and wins. Neither = a public client (PKCE only)',
  }),
  clientSecret: custom({
    env: 'OIDC_CLIENT_SECRET',
    reload: 'restart',
    fields: [],
    docDefault: 'none',
    doc: 'the client secret itself (prefer `client_secret_file`)',
  }),
  redirectUrl: str({
    env: 'OIDC_REDIRECT_URL',
    yaml: 'redirect_url',
    reload: 'restart',
    fields: ['redirectUrl'],
    docDefault: 'none',
    doc: 'the callback URL registered at the provider: the gateway as browsers reach it, path `/auth/callback` (`https://gateway.example.com/auth/callback`). An `https` URL makes the session cookie `Secure`',
  }),
  rolesClaim: str({
    env: 'OIDC_ROLES_CLAIM',
    yaml: 'roles_claim',
    default: 'groups',
    reload: 'restart',
    fields: ['rolesClaim'],
    doc: 'the claim (of the ID token, the access token or userinfo) whose values map to roles; a string or a list of strings',
  }),
  roles: custom({
    yaml: 'roles',
    reload: 'restart',
    fields: ['roles'],
    docDefault: 'none (nobody gets a role)',
    doc: '`{viewer: [claim values], operator: [...], admin: [...]}`: a user whose claim holds one of the values gets that role (the highest one wins); a user with none is refused. Roles are in [enterprise.md](enterprise.md#roles)',
  }),
  audience: str({
    env: 'OIDC_AUDIENCE',
    yaml: 'audience',
    reload: 'restart',
    fields: ['audience'],
    docDefault: 'none (not checked)',
    doc: 'set: a bearer access token must carry it in `aud`',
  }),
  sessionTtl: secs({
    env: 'OIDC_SESSION_TTL_SECS',
    yaml: 'session_ttl_secs',
    default: 3600,
    opts: { min: 60, max: 86400 },
    reload: 'restart',
    fields: ['sessionTtlMs'],
    doc: 'lifetime of a dashboard session; then the user signs in again',
  }),
});
const S = OIDC_SETTINGS.settings;
const KEYS = yamlKeys(OIDC_SETTINGS);

/** Reads `auth:` (only `oidc:` inside it); undefined when no issuer is configured. */
export function readOidcConfig(env: Env, authSection: unknown, problems: string[]): OidcConfig | undefined {
  const auth = mapping(authSection, 'auth', problems);
  for (const key of Object.keys(auth)) if (key !== 'oidc') problems.push(`auth.${key} (config file) is not an auth setting (known: oidc)`);
  const yaml = mapping(auth.oidc, 'auth.oidc', problems);
  const r = new Reader(env, yaml, 'auth.oidc', KEYS);
  const issuer = read(r, env, S.issuer);
  const clientId = read(r, env, S.clientId);
  const secretFile = read(r, env, S.clientSecretFile);
  const redirectUrl = read(r, env, S.redirectUrl);
  const rolesClaim = read(r, env, S.rolesClaim);
  const audience = read(r, env, S.audience);
  const sessionTtlMs = read(r, env, S.sessionTtl);
  const roles = readRoles(yaml.roles, problems);
  for (const key of r.unknownKeys()) problems.push(`auth.oidc.${key} (config file) is not an OIDC setting (known: ${KEYS.join(', ')})`);
  problems.push(...r.problems);
  if (!issuer) return undefined;
  if (!/^https?:\/\/[^/]/.test(issuer)) problems.push(`auth.oidc.issuer must be an http(s) URL, got '${issuer}'`);
  if (!clientId) problems.push('auth.oidc.client_id (OIDC_CLIENT_ID) is required with an issuer');
  if (!redirectUrl || !/^https?:\/\/[^/]+\/auth\/callback$/.test(redirectUrl)) {
    problems.push(`auth.oidc.redirect_url (OIDC_REDIRECT_URL) must be the gateway's http(s) URL ending in /auth/callback, got '${redirectUrl ?? ''}'`);
  }
  let clientSecret = env[envName(S.clientSecret, env)] || undefined;
  if (!clientSecret && secretFile) {
    try {
      clientSecret = readFileSync(secretFile, 'utf8').replace(/\r?\n$/, '') || undefined;
    } catch (e) {
      problems.push(`auth.oidc.client_secret_file "${secretFile}" cannot be read: ${(e as Error).message.split('\n')[0]}`);
    }
  }
  return { issuer, clientId: clientId ?? '', clientSecret, redirectUrl: redirectUrl ?? '', rolesClaim, roles, audience, sessionTtlMs };
}

function readRoles(v: unknown, problems: string[]): Record<OidcRole, string[]> {
  const out: Record<OidcRole, string[]> = { viewer: [], operator: [], admin: [] };
  if (v === undefined || v === null) return out;
  if (typeof v !== 'object' || Array.isArray(v)) {
    problems.push('auth.oidc.roles must be a mapping {viewer: [...], operator: [...], admin: [...]}');
    return out;
  }
  for (const [role, values] of Object.entries(v as Record<string, unknown>)) {
    if (!ROLES.includes(role as OidcRole)) {
      problems.push(`auth.oidc.roles.${role} is not a role (known: ${ROLES.join(', ')})`);
      continue;
    }
    const list = typeof values === 'string' ? [values] : values;
    if (!Array.isArray(list) || !list.every((x) => typeof x === 'string' && x.length > 0)) {
      problems.push(`auth.oidc.roles.${role} must be a list of claim values`);
      continue;
    }
    out[role as OidcRole] = list as string[];
  }
  return out;
}

function mapping(v: unknown, name: string, problems: string[]): Record<string, unknown> {
  if (v === undefined || v === null) return {};
  if (typeof v !== 'object' || Array.isArray(v)) {
    problems.push(`${name} (config file) must be a mapping`);
    return {};
  }
  return v as Record<string, unknown>;
}
