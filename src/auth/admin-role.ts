import { applyDecorators, SetMetadata } from '@nestjs/common';
import { ApiExtension } from '@nestjs/swagger';
import type { AdminRole as Role } from './admin-actor';

export const ADMIN_ROLE_KEY = 'switchboard:admin-role';
/** The OpenAPI operation extension naming a route's role (clients and the role test read it). */
export const ADMIN_ROLE_EXTENSION = 'x-switchboard-role';

/**
 * The lowest role that may call an admin route (viewer < operator < admin, see admin-actor.ts). The
 * admin guard refuses a caller below it with 403 `forbidden`; a route without it needs `admin`.
 * The OpenAPI document shows it as `x-switchboard-role`.
 */
export const AdminRole = (role: Role) => applyDecorators(SetMetadata(ADMIN_ROLE_KEY, role), ApiExtension(ADMIN_ROLE_EXTENSION, role));
