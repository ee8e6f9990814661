import type { FastifyRequest } from 'fastify';

/** The three operator roles, lowest first (issue 21): each includes what the ones below may do. */
export const ADMIN_ROLES = ['viewer', 'operator', 'admin'] as const;
export type AdminRole = (typeof ADMIN_ROLES)[number];

/**
 * Who an admin request acts as, set on the request by the admin guard once it has authenticated
 * it, and read by whatever records what the request did (the audit trail). Never holds a secret.
 */
export interface AdminActor {
  /** `admin-token`: the break-glass ADMIN_TOKEN; `sso`: an OpenID Connect session or access token; `sighup`: a signal. */
  kind: 'admin-token' | 'sso' | 'sighup';
  /** Stable id: the token's `sub` for SSO, `admin-token` or `sighup` otherwise. */
  subject: string;
  /** A display name (the token's `name`/`preferred_username`/`email`), when known. */
  name?: string;
  role: AdminRole;
}

const ACTOR = Symbol('switchboard.adminActor');

export function setAdminActor(request: FastifyRequest, actor: AdminActor): void {
  (request as unknown as Record<symbol, AdminActor>)[ACTOR] = actor;
}

/** The actor the guard authenticated, or undefined on a request no admin guard let through. */
export function adminActorOf(request: FastifyRequest): AdminActor | undefined {
  return (request as unknown as Record<symbol, AdminActor | undefined>)[ACTOR];
}

/** Whether `role` may do what `required` allows. */
export function roleAllows(role: AdminRole, required: AdminRole): boolean {
  return ADMIN_ROLES.indexOf(role) >= ADMIN_ROLES.indexOf(required);
}
