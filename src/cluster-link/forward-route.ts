import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppConfig } from '../config';
import { CLUSTER_AUTH_HEADER, clusterAuthMatches, INTERNAL_PREFIX, internalRouteServed } from '../cluster/internal-link';
import type { Fleet } from '../fleet/fleet.service';
import type { ForwardRelays } from './forward-relays';

/** The internal route a replica forwards a request to: the worker's id in the path. */
export const FORWARD_PATH = `${INTERNAL_PREFIX}/workers/:id/requests`;

/** A forwarded request's first line: the `request` frame without its body (which follows, raw). */
export interface ForwardedRequestHead {
  request_id: string;
  model: string;
  endpoint_path: string;
  is_streaming: boolean;
  headers?: Record<string, string>;
}

const MAX_ID = 256;

/**
 * Serves forwarded requests on the public listener (the cluster secret authenticates them). Not a
 * Nest controller: the body is the client's own (up to `MAX_BODY_BYTES`, raw, after one line of
 * JSON), so it needs its own body limit, and nothing of the client API's admission applies — the
 * calling replica admitted it.
 *
 * Answers: 401 without the secret; 400 for a malformed head; 410 when the worker is not connected
 * here (any more); 409 when it has no free slot (the caller routes it again); else 200 and the
 * worker's frames for the request, one JSON object per line, until its last frame.
 */
export function registerForwardRoute(fastify: FastifyInstance, config: AppConfig, fleet: Fleet, relays: ForwardRelays): void {
  const secret = config.cluster.secret;
  fastify.post(FORWARD_PATH, { bodyLimit: 2 * config.maxBodyBytes + 1024 * 1024 }, (req: FastifyRequest, reply: FastifyReply) => {
    if (!internalRouteServed(config.cluster.listenAddr, req.raw.socket)) return reply.code(404).send({ error: 'not found' });
    if (!clusterAuthMatches(req.headers[CLUSTER_AUTH_HEADER], secret)) return reply.code(401).send({ error: 'cluster secret required' });
    const text = typeof req.body === 'string' ? req.body : '';
    const nl = text.indexOf('\n');
    const head = nl > 0 ? readHead(text.slice(0, nl)) : undefined;
    if (!head) return reply.code(400).send({ error: 'malformed forwarded request' });
    const worker = fleet.sessions.get((req.params as { id: string }).id);
    if (!worker || worker.remote) return reply.code(410).send({ error: 'worker not connected to this replica' });
    // A retry of a request whose cancelled run still holds its slot here waits for another slot.
    if (worker.assigned.has(head.request_id) || worker.held.has(head.request_id) || relays.has(head.request_id)) {
      return reply.code(409).send({ error: 'request id still in flight here', load: worker.load });
    }
    const lease = fleet.reserve(worker, head.request_id, head.model);
    if (!lease) return reply.code(409).send({ error: 'no free slot', load: worker.load });
    reply.hijack();
    const out = reply.raw;
    out.writeHead(200, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' });
    // The caller learns at once that the slot is granted (its connect timeout ends there).
    out.flushHeaders();
    // Frames follow one by one: no delay on the small writes of a stream.
    out.socket?.setNoDelay(true);
    const body = text.slice(nl + 1);
    relays.open(lease, out, () =>
      lease.send({
        type: 'request',
        request_id: head.request_id,
        model: head.model,
        endpoint_path: head.endpoint_path,
        is_streaming: head.is_streaming,
        body,
        ...(head.headers ? { headers: head.headers } : {}),
      }),
    );
  });
}

function readHead(line: string): ForwardedRequestHead | undefined {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (!o || typeof o !== 'object') return undefined;
  const { request_id, model, endpoint_path, is_streaming, headers } = o;
  if (!isId(request_id) || !isId(model) || typeof endpoint_path !== 'string' || !endpoint_path.startsWith('/') || typeof is_streaming !== 'boolean')
    return undefined;
  if (headers !== undefined && !isStringMap(headers)) return undefined;
  return { request_id, model, endpoint_path, is_streaming, ...(headers ? { headers } : {}) };
}

function isId(v: unknown): v is string {
  return typeof v === 'string' && v.length > 0 && v.length <= MAX_ID;
}

function isStringMap(v: unknown): v is Record<string, string> {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return false;
  return Object.values(v as Record<string, unknown>).every((s) => typeof s === 'string');
}
