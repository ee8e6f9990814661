import { createRequire } from 'node:module';
import type * as Jose from 'jose';
import type * as OpenIdClient from 'openid-client';

type ModuleApi = typeof import('node:module');

/**
 * `jose` and `openid-client` ship as ES modules only. Node (20.19+) loads them with `require`; the
 * require is taken from the real `node:module` (process.getBuiltinModule), not the one in scope, so
 * a test runner that wraps `require` (Jest) still gets Node's loader. Loaded once, on first use.
 */
function nativeRequire(): NodeJS.Require {
  const get = (process as unknown as { getBuiltinModule?: (name: string) => unknown }).getBuiltinModule;
  return (get ? (get('node:module') as ModuleApi).createRequire : createRequire)(__filename);
}

let jose: typeof Jose | undefined;
let client: typeof OpenIdClient | undefined;

export function loadJose(): typeof Jose {
  return (jose ??= nativeRequire()('jose') as typeof Jose);
}

export function loadOpenIdClient(): typeof OpenIdClient {
  return (client ??= nativeRequire()('openid-client') as typeof OpenIdClient);
}
