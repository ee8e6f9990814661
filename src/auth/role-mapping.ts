import type { OidcConfig } from '../config/sections/auth';
import { ADMIN_ROLES, AdminActor, AdminRole } from './admin-actor';

/**
 * The values of the roles claim in a token's claims: a string or a list of strings, at a plain name
 * (`groups`) or a dotted path (`realm_access.roles` for Keycloak realm roles).
 */
export function claimValues(claims: Record<string, unknown>, claim: string): string[] {
  let v: unknown = claims[claim];
  if (v === undefined && claim.includes('.')) {
    v = claim.split('.').reduce<unknown>((o, k) => (o && typeof o === 'object' ? (o as Record<string, unknown>)[k] : undefined), claims);
  }
  if (typeof v === 'string') return [v];
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

/** The highest role whose configured values meet the user's claim values; undefined = no role. */
export function roleFor(config: Pick<OidcConfig, 'roles' | 'rolesClaim'>, claims: Record<string, unknown>): AdminRole | undefined {
  const values = new Set(claimValues(claims, config.rolesClaim));
  for (const role of [...ADMIN_ROLES].reverse()) if (config.roles[role].some((v) => values.has(v))) return role;
  return undefined;
}

/** The actor of an SSO user; undefined when the claims grant no role (or carry no subject). */
export function ssoActor(config: Pick<OidcConfig, 'roles' | 'rolesClaim'>, claims: Record<string, unknown>): AdminActor | undefined {
  const role = roleFor(config, claims);
  const sub = typeof claims.sub === 'string' ? claims.sub : undefined;
  if (!role || !sub) return undefined;
  const name = [claims.name, claims.preferred_username, claims.email].find((x): x is string => typeof x === 'string' && x.length > 0);
  return { kind: 'sso', subject: sub, ...(name ? { name: name.slice(0, 200) } : {}), role };
}
