import type { OpenAPIObject } from '@nestjs/swagger';
import { OperationDoc, toOperationObject } from './api-doc';
import { CONTROL_PLANE_API } from './schemas/control-plane.schemas';

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

/**
 * Routes the document describes from their contract although their controllers are not in this
 * tree yet (the configuration reload routes are being added in parallel). Once a route is
 * registered and decorated with `@ApiDoc(...)`, its scanned operation wins and the entry here
 * can go; until it is decorated, the contract's operation replaces the bare scanned one.
 */
export const DOCUMENTED_ROUTES: ReadonlyArray<{ method: Method; path: string; doc: OperationDoc }> = [
  { method: 'post', path: '/admin/reload', doc: CONTROL_PLANE_API.reload },
  { method: 'post', path: '/v1/pools/{id}/reload', doc: CONTROL_PLANE_API.reloadPool },
];

export function addDocumentedRoutes(document: OpenAPIObject): void {
  for (const { method, path, doc } of DOCUMENTED_ROUTES) {
    const item = (document.paths[path] ??= {});
    if (!item[method]?.summary) item[method] = toOperationObject(doc);
  }
}
