import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Clock } from '../common/clock';
import { errorBody, errorHeaders } from '../common/error-dialect';
import { Errors, GatewayError, statusOf } from '../common/gateway-error';
import type { AppConfig } from '../config';
import { TENANT_ID } from '../config/sections/tenancy';
import { CLUSTER_AUTH_HEADER, clusterAuthMatches, INTERNAL_PREFIX } from '../cluster/internal-link';
import type { ClientIdentity } from '../tenancy/client-identity';
import { TASK_KEY_HEADER, TASK_TENANT_HEADER } from './remote-tasks';
import { serveTaskStream } from './task-stream';
import type { TasksService } from './tasks.service';

export const INTERNAL_TASK_PATH = `${INTERNAL_PREFIX}/tasks/:id`;

/**
 * The task routes another replica relays to, registered in cluster mode only (like the forward
 * route: the internal API is no part of the gateway's documented one) and answering only with the
 * cluster secret. The same answers as `/v1/tasks/:id…` for a task held here, for the tenant the
 * relaying replica authenticated (errors in the same OpenAI-dialect body). Never relayed further:
 * a task not held here is `404`.
 */
export function registerInternalTaskRoutes(fastify: FastifyInstance, config: AppConfig, clock: Clock, tasks: TasksService): void {
  const secret = config.cluster.secret;
  const handle =
    (answer: (req: FastifyRequest, reply: FastifyReply, identity: ClientIdentity, id: string) => void) => (req: FastifyRequest, reply: FastifyReply) => {
      if (!clusterAuthMatches(req.headers[CLUSTER_AUTH_HEADER], secret)) return reply.code(401).send({ error: 'cluster secret required' });
      try {
        answer(req, reply, callerOf(req), (req.params as { id: string }).id);
      } catch (e) {
        if (!(e instanceof GatewayError)) throw e;
        reply
          .code(statusOf(e.code))
          .headers(errorHeaders(e))
          .header('content-type', 'application/json')
          .send(JSON.stringify(errorBody('openai', e)));
      }
    };
  fastify.get(
    INTERNAL_TASK_PATH,
    handle((_req, reply, identity, id) => reply.code(200).send(orThrow(tasks.status(identity, id)))),
  );
  fastify.post(
    `${INTERNAL_TASK_PATH}/cancel`,
    handle((_req, reply, identity, id) => reply.code(200).send(orThrow(tasks.cancel(identity, id)))),
  );
  fastify.get(
    `${INTERNAL_TASK_PATH}/stream`,
    handle((req, reply, identity, id) =>
      serveTaskStream(tasks, orThrow(tasks.find(identity, id)), req, reply, { clock, timeoutMs: config.slowClientTimeoutMs }),
    ),
  );
}

/** The tenant (and key id) the relaying replica authenticated; only the tenant decides ownership, as on the public routes. */
function callerOf(req: FastifyRequest): ClientIdentity {
  const tenant = req.headers[TASK_TENANT_HEADER];
  if (typeof tenant !== 'string' || !TENANT_ID.test(tenant))
    throw Errors.invalidRequest(`${TASK_TENANT_HEADER} must name the caller's tenant`, TASK_TENANT_HEADER);
  const key = req.headers[TASK_KEY_HEADER];
  return { tenant, priority: 1, keyId: typeof key === 'string' ? key : undefined };
}

function orThrow<T>(value: T | GatewayError): T {
  if (value instanceof GatewayError) throw value;
  return value;
}
