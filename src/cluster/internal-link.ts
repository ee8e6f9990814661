import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * The internal link between replicas: plain HTTP(S) to a member's `advertise_url`, under
 * `INTERNAL_PREFIX`, every call carrying the cluster secret in `CLUSTER_AUTH_HEADER`. A replica
 * answers these routes only in cluster mode and only with the right secret (see
 * InternalClusterGuard); clients never reach them by accident (404 without cluster mode).
 */
export const INTERNAL_PREFIX = '/internal/cluster/v1';

/** The header that carries `CLUSTER_SECRET` on replica-to-replica calls. */
export const CLUSTER_AUTH_HEADER = 'x-switchboard-cluster-auth';

/** The header that names the calling replica (for logs and /admin/cluster; never trusted for authorization). */
export const CLUSTER_FROM_HEADER = 'x-switchboard-replica';

/** Whether a presented secret equals the cluster's, in constant time (digests compared, so lengths never leak). */
export function clusterAuthMatches(presented: string | string[] | undefined, secret: string | undefined): boolean {
  if (!secret || typeof presented !== 'string' || presented.length === 0) return false;
  const a = createHash('sha256').update(presented).digest();
  const b = createHash('sha256').update(secret).digest();
  return timingSafeEqual(a, b);
}

/** The headers every internal call carries. */
export function internalHeaders(secret: string, replicaId: string): Record<string, string> {
  return { [CLUSTER_AUTH_HEADER]: secret, [CLUSTER_FROM_HEADER]: replicaId };
}

/** Sockets accepted by the internal listener (`CLUSTER_LISTEN_ADDR`). */
const internalSockets = new WeakSet<object>();

/** The internal listener accepted this connection. */
export function markInternal(socket: object): void {
  internalSockets.add(socket);
}

/**
 * Whether an internal route answers a request that came on `socket`: with `CLUSTER_LISTEN_ADDR` set
 * only on the internal listener (the public one answers 404), otherwise on the public listener.
 */
export function internalRouteServed(listenAddr: string | undefined, socket: object | undefined | null): boolean {
  return !listenAddr || (socket != null && internalSockets.has(socket));
}
