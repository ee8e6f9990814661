import { boundedRetryMs, safeIsoTime } from './safe-time';
import type { GatewayErrorCode } from './gateway-error-codes';

export { boundedRetryMs, MAX_RETRY_AFTER_MS, safeIsoTime } from './safe-time';
export { GATEWAY_ERROR_CODES, isRetriable, kindOf, statusOf } from './gateway-error-codes';
export type { ErrorCodeSpec, ErrorKind, GatewayErrorCode } from './gateway-error-codes';

export interface GatewayErrorDetails {
  retryAfterMs?: number;
  policyLabel?: string;
  param?: string;
  /** Extra fields for the dialect's error object, beside `code` and `retriable` (e.g. `missing`). */
  fields?: Record<string, unknown>;
}

/**
 * What a refused rate-limit check reports (fields `limit`, `remaining`, `reset_at`, `retry_after_ms`,
 * and the model-runner seed's `resetAt`, epoch seconds). `resetAt` here is epoch ms.
 */
export interface RateLimitDetails {
  limit: number;
  remaining: number;
  resetAt: number;
  retryAfterMs: number;
}

function rateLimitDetails(d: RateLimitDetails): GatewayErrorDetails {
  return {
    retryAfterMs: boundedRetryMs(d.retryAfterMs),
    fields: { limit: d.limit, remaining: d.remaining, reset_at: safeIsoTime(d.resetAt), resetAt: Math.ceil(Date.parse(safeIsoTime(d.resetAt)) / 1000) },
  };
}

const PER_MINUTE = { requests: 'req/min', tokens: 'tok/min' } as const;

/**
 * Domain errors with stable codes (the table of codes, statuses, kinds and retriability is
 * `gateway-error-codes.ts`). `error-dialect.ts` (beside it) is the one place that maps a code
 * to an HTTP status and to the caller's dialect.
 */
export class GatewayError extends Error {
  constructor(
    readonly code: GatewayErrorCode,
    message: string,
    readonly details: GatewayErrorDetails = {},
  ) {
    super(message);
    this.name = 'GatewayError';
  }

  /** The same error with more details (fields are merged; the error's own win). */
  with(details: GatewayErrorDetails): GatewayError {
    return new GatewayError(this.code, this.message, {
      ...details,
      ...this.details,
      retryAfterMs: this.details.retryAfterMs ?? details.retryAfterMs,
      fields: { ...details.fields, ...this.details.fields },
    });
  }
}

/** Retry hint of `pool_unavailable`: a cordon lasts until an operator lifts it, so not seconds. */
export const POOL_UNAVAILABLE_RETRY_MS = 30_000;

/** Stable, sanitized client messages for each code (no internal names). */
export const Errors = {
  invalidRequest: (message: string, param?: string) => new GatewayError('invalid_request', message, { param }),
  // The name is the client's and unbounded: echo a prefix (never ending in half a surrogate pair).
  modelNotFound: (model: string) =>
    new GatewayError('model_not_found', `Model '${model.length > 256 ? `${model.slice(0, 256).replace(/[\uD800-\uDBFF]$/, '')}…` : model}' not found`),
  /**
   * Task admission's refusal of a model nobody serves (`POST /v1/tasks`, `check: "model"`): a 400
   * ADMISSION_REJECT where the inference routes answer 404 `model_not_found`, with the router's
   * message (it names the model, or the alias and its missing target).
   */
  unknownModel: (notFound: GatewayError) => new GatewayError('unknown_model', notFound.message, notFound.details),
  aliasTargetNotFound: (alias: string, target: string) =>
    new GatewayError('model_not_found', `Model '${alias}' is an alias of '${target}', and model '${target}' not found`),
  capabilityMismatch: (model: string, missing: string[]) =>
    new GatewayError('capability_mismatch', `No worker supports the required capabilities for model '${model}': ${missing.join(', ')}`, {
      fields: { missing },
    }),
  fallbackExhausted: (attempted: string[], missing?: string[]) =>
    new GatewayError('fallback_exhausted', `All models in the fallback chain are unavailable: ${attempted.join(', ')}`, {
      retryAfterMs: 1000,
      fields: missing ? { attempted_models: attempted, missing } : { attempted_models: attempted },
    }),
  noHealthyWorker: (model: string, retryAfterMs: number) =>
    new GatewayError('no_healthy_worker', `No healthy worker available for model '${model}'`, { retryAfterMs }),
  /** The message names the tenant and the limit, as the model-runner seed's does ("Tenant community-x exceeded 100 req/min"). */
  rateLimitExceeded: (kind: 'requests' | 'tokens', d: RateLimitDetails, tenant?: string) =>
    new GatewayError(
      'rate_limit_exceeded',
      tenant === undefined
        ? `Rate limit of ${d.limit} ${PER_MINUTE[kind]} exceeded, please retry`
        : `Tenant ${quoted(tenant)} exceeded ${d.limit} ${PER_MINUTE[kind]}, please retry`,
      rateLimitDetails(d),
    ),
  budgetExceeded: (d: RateLimitDetails) => new GatewayError('budget_exceeded', 'Daily token budget exceeded, please retry later', rateLimitDetails(d)),
  /**
   * A task's prompt (estimated) plus `max_tokens` does not fit: its own `ctx` bound, or the context
   * length of every worker that could serve it.
   */
  contextExceeded: (d: { promptTokens: number; maxTokens: number; ctx?: number; model: string }) =>
    new GatewayError(
      'context_exceeded',
      d.ctx !== undefined
        ? `The prompt (about ${d.promptTokens} tokens) plus max_tokens (${d.maxTokens}) exceeds ctx (${d.ctx})`
        : `The prompt (about ${d.promptTokens} tokens) plus max_tokens (${d.maxTokens}) exceeds the context length of every worker serving model '${d.model.slice(0, 256)}'`,
      {
        param: d.ctx !== undefined ? 'ctx' : 'max_tokens',
        fields: { check: 'context', estimated_prompt_tokens: d.promptTokens, max_tokens: d.maxTokens, ...(d.ctx !== undefined ? { ctx: d.ctx } : {}) },
      },
    ),
  /** A session's token or time budget cannot cover the task (at admission) or was spent (while it ran). */
  sessionBudgetExceeded: (d: { budget: 'tokens' | 'time'; limit: number; used: number; requested?: number }) =>
    new GatewayError(
      'session_budget_exceeded',
      d.budget === 'tokens'
        ? d.requested !== undefined
          ? `The session's token budget cannot cover this task: ${d.used} of ${d.limit} tokens used, the task may need ${d.requested}`
          : `The session's token budget is spent: ${d.used} of ${d.limit} tokens used`
        : `The session's time budget is spent: ${Math.round(d.used / 1000)} of ${Math.round(d.limit / 1000)} seconds used`,
      {
        fields:
          d.budget === 'tokens'
            ? {
                check: 'session_tokens',
                limit: d.limit,
                used: d.used,
                remaining: Math.max(0, d.limit - d.used),
                ...(d.requested !== undefined ? { requested: d.requested } : {}),
              }
            : { check: 'session_time', limit_secs: d.limit / 1000, used_secs: Math.round(d.used) / 1000 },
      },
    ),
  modelNotAllowed: (model: string) => new GatewayError('model_not_allowed', `This API key or tenant may not use model '${model}'`),
  invalidParams: (message: string, param?: string) => new GatewayError('invalid_params', message, { param }),
  poolUnready: (provider: string, reason: string) =>
    new GatewayError('pool_unready', `Provider '${provider}' is not ready: ${reason}`, { retryAfterMs: 1000, fields: { pool_id: provider } }),
  /** The provider is cordoned (drained by an operator until undrain) and no other pool can serve. */
  poolUnavailable: (provider: string) =>
    new GatewayError('pool_unavailable', `Provider '${provider}' is drained by an operator and takes no new requests`, {
      retryAfterMs: POOL_UNAVAILABLE_RETRY_MS,
      fields: { pool_id: provider },
    }),
  /** A request body that parsed but failed validation: one entry per field. */
  validationFailed: (fields: Array<{ field: string; message: string }>) =>
    new GatewayError('validation_failed', `Request body failed validation: ${fields.map((f) => f.field).join(', ')}`, {
      param: fields[0]?.field,
      fields: { fields },
    }),
  notFound: (kind: string, id: string) => new GatewayError('not_found', `${kind} '${id.length > 128 ? `${id.slice(0, 128)}…` : id}' not found`),
  conflict: (message: string) => new GatewayError('conflict', message),
  /** `queueDepth` and `avgWaitMs` are the model-runner seed's names, beside ours; the message names both figures. */
  queueFull: (retryAfterMs: number, queueDepth: number, avgWaitMs: number, tenantShare = false) =>
    new GatewayError(
      'queue_full',
      `${tenantShare ? "Your tenant's share of the queue is full" : 'Service temporarily at capacity'}: queue depth ${queueDepth}, average wait ${Math.round(avgWaitMs)} ms, please retry`,
      {
        retryAfterMs,
        policyLabel: tenantShare ? 'tenant_queue_full_reject' : 'queue_full_reject',
        fields: { queue_depth: queueDepth, avg_wait_ms: avgWaitMs, queueDepth, avgWaitMs },
      },
    ),
  queueTimeout: () => new GatewayError('queue_timeout', 'No worker became available within the queue timeout'),
  requestTimeout: () => new GatewayError('request_timeout', 'The request timed out'),
  requeueExhausted: () => new GatewayError('requeue_exhausted', 'Request could not be completed: requeue attempts exhausted'),
  providerDisabled: () => new GatewayError('provider_disabled', 'Provider is currently disabled'),
  providerNotFound: () => new GatewayError('provider_not_found', 'Provider not found'),
  providerDeleted: () => new GatewayError('provider_deleted', 'Provider was removed while the request was pending'),
  drainTimeout: () => new GatewayError('drain_timeout', 'Worker shut down before the request completed'),
  workerError: () => new GatewayError('worker_error', 'The worker failed to process the request'),
  workerDisconnected: () => new GatewayError('worker_disconnected', 'The worker disconnected during the response'),
  streamTooLarge: () => new GatewayError('stream_too_large', 'The response stream exceeded the maximum size'),
  clientTooSlow: () => new GatewayError('client_too_slow', 'The client did not read the response fast enough'),
  // Clients' unread responses fill the gateway's buffer budget (MAX_BUFFERED_BYTES); they drain in seconds.
  gatewayOverloaded: () => new GatewayError('gateway_overloaded', 'The gateway is busy delivering other responses; retry shortly', { retryAfterMs: 1000 }),
  payloadTooLarge: (limit: number) => new GatewayError('payload_too_large', `Request body exceeds ${limit} bytes`),
  /** `POST /v1/artifacts` past the tenant's stored-bytes quota (`artifacts.max_bytes_per_tenant`). */
  artifactQuotaExceeded: (limit: number, stored: number, size: number) =>
    new GatewayError(
      'artifact_quota_exceeded',
      `The tenant's artifacts use ${stored} of its ${limit} bytes (artifacts.max_bytes_per_tenant); this artifact of ${size} bytes does not fit`,
      { fields: { limit_bytes: limit, stored_bytes: stored } },
    ),
  serverShutdown: () => new GatewayError('server_shutdown', 'The gateway is shutting down'),
  /** Something failed inside the gateway (logged with its stack); the message never says what. */
  internalError: () => new GatewayError('internal_error', 'Internal error'),
  /** A dependency the request needed (Redis, the database) did not answer; retrying soon may work. */
  dependencyUnavailable: () =>
    new GatewayError('dependency_unavailable', 'A service the gateway depends on is unavailable, please retry', { retryAfterMs: 1000 }),
  tooManyConnections: () =>
    new GatewayError('too_many_connections', 'The gateway holds its maximum of client connections, please retry', { retryAfterMs: 1000 }),
  // Client API keys (api-keys/): one message whatever was wrong, so answers never tell which keys exist.
  missingApiKey: () => new GatewayError('invalid_api_key', 'Missing API key: send it as Authorization: Bearer <key> or x-api-key: <key>'),
  invalidApiKey: () => new GatewayError('invalid_api_key', 'Invalid API key'),
  /** An anonymous caller naming (x-tenant-id) a tenant that has API keys: see docs/tenancy.md. */
  tenantKeyRequired: () =>
    new GatewayError('invalid_api_key', 'This tenant has API keys: send one of them (Authorization: Bearer <key> or x-api-key: <key>)', {
      param: 'x-tenant-id',
    }),
  authRateLimited: (retryAfterMs: number) =>
    new GatewayError('auth_rate_limited', 'Too many failed API key authentications from this address, retry later', { retryAfterMs }),
  adminAuthRateLimited: (retryAfterMs: number) =>
    new GatewayError('auth_rate_limited', 'Too many failed admin token attempts from this address, retry later', { retryAfterMs }),
  // Model lifecycle (lifecycle/) and its governance (governance/): see docs/lifecycle.md.
  lifecycleDisabled: () =>
    new GatewayError(
      'lifecycle_disabled',
      'Model lifecycle operations are disabled: the gateway has no governance signers configured (governance.signers / GOVERNANCE_SIGNERS_FILE)',
    ),
  lifecycleUnsupported: (message: string) => new GatewayError('lifecycle_unsupported', message),
  /** An accepted unload or cache flush did not complete on every worker (`workers` says how each ended). */
  lifecycleFailed: (message: string, workers: unknown[]) => new GatewayError('lifecycle_failed', message, { fields: { workers } }),
  opTokenMissing: () =>
    new GatewayError('op_token_missing', 'This operation needs a verifiedOpToken signed by the governance signers', { param: 'verifiedOpToken' }),
  opTokenMalformed: (why: string) => new GatewayError('op_token_malformed', `verifiedOpToken is malformed: ${why}`, { param: 'verifiedOpToken' }),
  opTokenBadSignature: (why = 'wrong key, or the token was altered') =>
    new GatewayError('op_token_bad_signature', `verifiedOpToken signature does not match (${why})`, { param: 'verifiedOpToken' }),
  opTokenExpired: (skewSecs: number, windowSecs: number) =>
    new GatewayError(
      'op_token_expired',
      skewSecs > 0
        ? `verifiedOpToken was issued ${skewSecs} s ago, more than the ${windowSecs} s allowed`
        : `verifiedOpToken is issued ${-skewSecs} s in the future, more than the ${windowSecs} s of clock skew allowed`,
      { param: 'verifiedOpToken' },
    ),
  opTokenReplayed: () =>
    new GatewayError('op_token_replayed', 'verifiedOpToken was already used (its nonce has been seen): mint a new token', { param: 'verifiedOpToken' }),
  opTokenMismatch: (field: string, signed: string | undefined, requested: string | undefined) =>
    new GatewayError('op_token_mismatch', `verifiedOpToken was signed for ${field} ${quoted(signed)}, not ${quoted(requested)}`, { param: 'verifiedOpToken' }),
  opTokenDuplicateSigners: (names: string[]) =>
    new GatewayError('op_token_duplicate_signers', `verifiedOpToken lists signer(s) more than once: ${names.join(', ')}`, { param: 'verifiedOpToken' }),
  opTokenUnknownSigner: (names: string[]) =>
    new GatewayError('op_token_unknown_signer', `verifiedOpToken is signed by unknown signer(s): ${names.join(', ')}`, { param: 'verifiedOpToken' }),
  opTokenInsufficientSigners: (have: number, need: number, of: number) =>
    new GatewayError('op_token_insufficient_signers', `verifiedOpToken has ${have} signer(s); ${need} of the ${of} governance signers must sign`, {
      param: 'verifiedOpToken',
    }),
  /** The `accepted` audit row of a lifecycle operation could not be written: nothing was sent (fail closed). */
  auditUnavailable: () =>
    new GatewayError(
      'audit_unavailable',
      'The audit trail cannot be written, so the operation was not sent to any worker; retry with a new verifiedOpToken once the database is back',
    ),
} as const;

/** A client-supplied value in a message: quoted and bounded, or "none". */
function quoted(value: string | undefined): string {
  if (value === undefined) return 'none';
  return `'${value.length > 128 ? `${value.slice(0, 128)}…` : value}'`;
}
