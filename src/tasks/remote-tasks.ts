import { Inject, Injectable } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Agent as HttpAgent, ClientRequest, IncomingMessage, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { Errors, GatewayError } from '../common/gateway-error';
import { APP_CONFIG, AppConfig } from '../config';
import { INTERNAL_PREFIX, internalHeaders } from '../cluster/internal-link';
import { Membership } from '../cluster/membership.port';
import { CORRELATION_HEADER } from '../observability/correlation-id';
import type { ClientIdentity } from '../tenancy/client-identity';
import { liveHolder } from './task-holder';
import { TaskLocator } from './task-locator';

/** The caller's tenant (and key id, for logs) on a relayed call: the owner checks ownership with it. */
export const TASK_TENANT_HEADER = 'x-switchboard-task-tenant';
export const TASK_KEY_HEADER = 'x-switchboard-task-key';

/** How long the owner may take to start answering (its headers; a stream's events then flow as they come). */
const ANSWER_TIMEOUT_MS = 10_000;

/** Never relayed: they describe one hop, not the answer. */
const HOP_HEADERS = new Set(['connection', 'keep-alive', 'transfer-encoding', 'proxy-connection', 'upgrade', 'te', 'trailer']);

export type TaskCall = 'status' | 'cancel' | 'stream';

/**
 * Tasks held by another replica (cluster mode): a task runs, and keeps its events, at the replica
 * that accepted it. A replica asked about a task it does not hold finds the owner in Redis
 * (TaskLocator) and relays the call over the internal link; the owner answers exactly as its
 * public route would, for the same tenant.
 */
@Injectable()
export class RemoteTasks {
  private readonly agents = { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) };

  constructor(
    private readonly locator: TaskLocator,
    private readonly membership: Membership,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  get enabled(): boolean {
    return this.locator.enabled;
  }

  /**
   * The owner's address; `404` like an unknown task when no live replica holds it (its owner is
   * gone, and its events with it); `503` when Redis cannot say.
   */
  async locate(identity: ClientIdentity, id: string): Promise<string | GatewayError> {
    const owner = await this.locator.owner(identity.tenant, id);
    // Degraded, this replica's member list is itself alone: it cannot tell a lost owner from a live one.
    if (owner === 'unavailable' || this.membership.degraded()) return Errors.dependencyUnavailable();
    // Held by no live replica process (this one does not hold it either: it was looked up here first).
    const member = owner === undefined ? undefined : liveHolder(this.membership, owner);
    if (!member?.advertise_url || member.id === this.membership.replicaId) return Errors.notFound('Task', id);
    return member.advertise_url;
  }

  /**
   * Relays one call to the owner and its answer to the client as it comes (status, headers, body
   * bytes; a stream chunk by chunk). The client leaving closes the call to the owner, which
   * detaches its reader. Resolves once the answer has started; a refused connection (the owner's
   * process is gone) is `404`, any other failure before the answer `503`.
   */
  async forward(base: string, call: TaskCall, identity: ClientIdentity, id: string, req: FastifyRequest, reply: FastifyReply): Promise<void> {
    const url = new URL(`${INTERNAL_PREFIX}/tasks/${encodeURIComponent(id)}${call === 'status' ? '' : `/${call}`}`, base);
    const headers: Record<string, string> = {
      ...internalHeaders(this.config.cluster.secret ?? '', this.membership.replicaId),
      [TASK_TENANT_HEADER]: identity.tenant,
      [CORRELATION_HEADER]: req.correlationId,
      'content-length': '0',
    };
    if (identity.keyId) headers[TASK_KEY_HEADER] = identity.keyId;
    const lastEventId = req.headers['last-event-id'];
    if (call === 'stream' && lastEventId !== undefined) headers['last-event-id'] = Array.isArray(lastEventId) ? lastEventId[0] : lastEventId;

    const https = url.protocol === 'https:';
    const out: ClientRequest = (https ? httpsRequest : httpRequest)(url, {
      method: call === 'cancel' ? 'POST' : 'GET',
      headers,
      agent: https ? this.agents.https : this.agents.http,
    });
    let done = false;
    const clientGone = () => {
      if (!done) out.destroy();
    };
    reply.raw.once('close', clientGone);
    const answer = await new Promise<IncomingMessage | GatewayError>((resolve) => {
      const timer = setTimeout(() => out.destroy(new Error('no answer')), ANSWER_TIMEOUT_MS);
      out.once('response', (res) => {
        clearTimeout(timer);
        resolve(res);
      });
      out.once('error', (e: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        resolve(e.code === 'ECONNREFUSED' ? Errors.notFound('Task', id) : Errors.dependencyUnavailable());
      });
      out.end();
    });
    if (answer instanceof GatewayError) {
      reply.raw.off('close', clientGone);
      throw answer;
    }
    const relayed: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(answer.headers)) if (value !== undefined && !HOP_HEADERS.has(name)) relayed[name] = value;
    const status = answer.statusCode ?? 502;
    answer.once('end', () => (done = true));
    if (call !== 'stream' || status !== 200) {
      // A JSON answer (a status, a refusal): read whole, then sent as this replica's own reply (access log included).
      const body = await readAll(answer).catch(() => undefined);
      if (body === undefined) throw Errors.dependencyUnavailable();
      delete relayed['content-length'];
      reply.code(status).headers(relayed).send(body);
      return;
    }
    reply.hijack();
    reply.raw.writeHead(status, relayed);
    reply.raw.flushHeaders();
    // The owner going away mid-stream cuts the client's too: it resumes with Last-Event-ID.
    answer.once('error', () => reply.raw.destroy());
    answer.once('aborted', () => reply.raw.destroy());
    answer.pipe(reply.raw);
  }

  onModuleDestroy(): void {
    this.agents.http.destroy();
    this.agents.https.destroy();
  }
}

/** The owner's whole answer (a task's status or a refusal: small); fails when the owner goes away meanwhile. */
function readAll(res: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.once('end', () => (res.complete ? resolve(Buffer.concat(chunks)) : reject(new Error('answer cut short'))));
    res.once('error', reject);
    res.once('aborted', () => reject(new Error('answer cut short')));
  });
}
