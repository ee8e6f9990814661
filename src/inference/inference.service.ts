import { Inject, Injectable, Logger } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config';
import { CLOCK, Clock } from '../common/clock';
import { randomUUID } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '../common/gateway-error';
import { forwardableHeaders } from '../protocol';
import { Dispatcher } from '../dispatch/dispatcher.service';
import { RelayRequest } from '../dispatch/relay-request';
import { CORRELATION_HEADER } from '../observability/correlation-id';
import type { AccessLogFields } from '../observability/access-log';
import { dialectOf } from '../common/error-dialect';
import { HttpResponseSink } from './http-response-sink';
import { parseInferenceBody } from './parse-inference-body';
import { checkCacheHeaders } from './cache-headers';
import { extractRequirements } from '../routing/requirements';
import { affinityKeyOf } from '../routing/affinity-key';
import { RoutingConfigHolder } from '../routing/routing-config-holder';
import { TENANT_HEADER } from '../tenancy/client-identity';
import { TenantsService } from '../tenancy/tenants.service';
import { LimitVerdict, TenantLimits } from '../tenancy/tenant-limits.service';
import { ApiKeysService } from '../api-keys/api-keys.service';
import { admissionFailure } from '../rate-limit/admission-failure';
import { translationFor } from '../translate/translations';

function presetHeaders(reply: FastifyReply): Record<string, string> | undefined {
  let out: Record<string, string> | undefined;
  for (const [name, value] of Object.entries(reply.getHeaders())) {
    if (value !== undefined) (out ??= {})[name] = Array.isArray(value) ? value.join(', ') : String(value);
  }
  return out;
}

/** Names a provider to route within (pinning); meant for the gateway, never forwarded. */
const PIN_HEADER = 'x-switchboard-provider';

export interface EndpointOptions {
  /** Endpoints that never stream (embeddings) ignore the body's `stream` flag. */
  streamable: boolean;
}

/** Turns an OpenAI/Anthropic HTTP request into a RelayRequest and hands it to the dispatcher. */
@Injectable()
export class InferenceService {
  /** Only CORS sets headers before the handler; without it there is nothing to carry over. */
  private readonly corsEnabled: boolean;
  private readonly log = new Logger('Admission');

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly dispatcher: Dispatcher,
    private readonly tenants: TenantsService,
    private readonly limits: TenantLimits,
    private readonly apiKeys: ApiKeysService,
    private readonly routing: RoutingConfigHolder,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {
    this.corsEnabled = config.corsOrigins.length > 0;
  }

  relay(req: FastifyRequest, reply: FastifyReply, endpointPath: string, options: EndpointOptions): void {
    // Admission (key, body, limits) starts now; a trace shows it before the request reaches dispatch.
    const arrivedAt = this.clock.now();
    // Headers hooks already set (CORS) would be lost with the hijacked reply: the sink writes them.
    const preset = this.corsEnabled ? presetHeaders(reply) : undefined;
    reply.hijack();
    const dialect = dialectOf(endpointPath);
    const sink = new HttpResponseSink(reply.raw, req.correlationId, dialect);
    if (preset) sink.addHeaders(preset);
    // API key (401 before anything else) and tenant; a gateway key is taken out of req.headers here.
    const identity = this.apiKeys.identify(req);
    if (identity instanceof GatewayError) return sink.fail(identity);
    const envelope = parseInferenceBody(req.body);
    if (envelope instanceof GatewayError) return sink.fail(envelope);
    const badCacheHeader = checkCacheHeaders(req.headers);
    if (badCacheHeader) return sink.fail(badCacheHeader);

    const headers = forwardableHeaders(req.headers) ?? {};
    // Responses travel back as text frames: a compressed backend body could not cross them.
    delete headers['accept-encoding'];
    const pin = headers[PIN_HEADER];
    delete headers[PIN_HEADER];
    headers[CORRELATION_HEADER] = req.correlationId;
    // The worker learns the tenant the gateway resolved, never what a client claimed beyond it.
    headers[TENANT_HEADER] = identity.tenant;
    // Cache affinity: the key is computed here, once, from the client's headers and body (issue 19).
    const routing = this.routing.current;
    const requirements = extractRequirements(endpointPath, envelope.json);
    const isStreaming = options.streamable && envelope.stream;
    // A path a chat-completions worker can also serve, translated, when no worker serves it natively.
    const translator = translationFor({
      endpoint: endpointPath,
      body: envelope.json,
      streaming: isStreaming,
      model: envelope.model,
      sink,
      correlationId: req.correlationId,
    });
    const affinityKey = routing.affinity.enabled
      ? affinityKeyOf(req.headers, endpointPath, envelope.json, routing.affinity, requirements.estimatedTokens * 4)
      : undefined;
    const tenantSettings = this.tenants.settingsOf(identity.tenant);
    const request = new RelayRequest({
      id: `r-${randomUUID()}`,
      model: envelope.model,
      endpointPath,
      isStreaming,
      body: req.body as string,
      headers,
      correlationId: req.correlationId,
      tenant: identity.tenant,
      keyId: identity.keyId,
      priority: identity.priority,
      maxQueued: tenantSettings.maxQueued,
      caps: this.dispatcher.caps.capsFor(identity.tenant, tenantSettings.maxConcurrent, identity.keyId, identity.keyMaxConcurrent),
      sink,
      route: {
        model: envelope.model,
        requirements,
        pin: pin === undefined ? undefined : pin.trim(),
        allowedModels: identity.allowedModels,
        allowedPools: identity.allowedPools,
        affinityKey,
        translation: translator && { kind: translator.kind, requirements: { ...requirements, endpoint: translator.endpoint } },
      },
      translator,
      maxTokens: maxTokensOf(envelope.json),
      arrivedAt,
      onTokens: (tokens) => this.limits.chargeTokens(identity, tokens, request.worker),
    });
    if (routing.exposeWorkerHeader) sink.nameWorker(() => request.worker?.name);
    // The access log's line for this request says how it was routed and how long it queued.
    (req as FastifyRequest & AccessLogFields).accessLogFields = () => ({
      tenant: request.tenant,
      model: request.model,
      served_model: request.targetModel || undefined,
      pool: request.provider?.name,
      worker_id: request.worker?.id,
      // 0 when a worker took it at once; absent when it never reached routing.
      queue_position: request.provider ? request.queuePosition : undefined,
      queue_wait_ms: request.waitedMs,
      requeues: request.requeues || undefined,
    });
    if (!sink.watchClient(() => this.dispatcher.clientGone(request))) return;
    // Limits are checked before the request may queue: synchronously in memory, over the network with Redis.
    const verdict = this.limits.admit(identity);
    // The reply is taken over: whatever fails from here on is answered here, or nobody answers.
    // (Closures only for the asynchronous verdict; the in-memory one is handled in place.)
    if (verdict instanceof Promise) {
      verdict.then((v) => this.admitted(request, sink, v)).catch((e: unknown) => this.admissionFailed(request, sink, e));
    } else {
      try {
        this.admitted(request, sink, verdict);
      } catch (e) {
        this.admissionFailed(request, sink, e);
      }
    }
  }

  /** The limits' verdict: their headers on the answer, then the request refused or submitted. */
  private admitted(request: RelayRequest, sink: HttpResponseSink, v: LimitVerdict): void {
    sink.addHeaders(v.headers);
    if (v.error) return this.dispatcher.reject(request, v.error);
    if (!sink.clientGone) this.dispatcher.submit(request);
  }

  /** Logs the failure and answers the client a dialect error (500, or 503 for a dependency down). */
  private admissionFailed(request: RelayRequest, sink: HttpResponseSink, e: unknown): void {
    const error = admissionFailure(e);
    this.log.error(`admitting request ${request.id} failed (answered ${error.code}): ${(e as Error)?.stack ?? String(e)}`);
    try {
      this.dispatcher.reject(request, error);
    } catch {
      sink.fail(error);
    }
  }
}

/** The output-token bound the client set, under whichever name its API uses (a number, or nothing). */
function maxTokensOf(body: Record<string, unknown>): number | undefined {
  const n = body.max_tokens ?? body.max_completion_tokens ?? body.max_output_tokens;
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}
