import type { SchemaObject } from '@nestjs/swagger';
import { ErrorKind, Errors, GatewayError, GatewayErrorCode, statusOf } from './gateway-error';
import { Dialect, errorBody, errorHeaders } from './error-dialect';
import type { ResponseDoc } from './api-doc';
import { HEADERS, json, ref } from './doc-common';

/** Every error code (the record makes the compiler insist on new ones). */
const CODES: Record<GatewayErrorCode, true> = {
  invalid_request: true,
  model_not_found: true,
  unknown_model: true,
  capability_mismatch: true,
  fallback_exhausted: true,
  no_healthy_worker: true,
  invalid_params: true,
  pool_unready: true,
  pool_unavailable: true,
  model_not_allowed: true,
  rate_limit_exceeded: true,
  budget_exceeded: true,
  context_exceeded: true,
  session_budget_exceeded: true,
  queue_full: true,
  queue_timeout: true,
  request_timeout: true,
  requeue_exhausted: true,
  provider_disabled: true,
  provider_not_found: true,
  provider_deleted: true,
  drain_timeout: true,
  worker_error: true,
  worker_disconnected: true,
  stream_too_large: true,
  client_too_slow: true,
  payload_too_large: true,
  server_shutdown: true,
  gateway_overloaded: true,
  too_many_connections: true,
  unauthorized: true,
  invalid_api_key: true,
  tenant_mismatch: true,
  auth_rate_limited: true,
  forbidden: true,
  not_found: true,
  conflict: true,
  validation_failed: true,
  internal_error: true,
  dependency_unavailable: true,
  lifecycle_disabled: true,
  lifecycle_unsupported: true,
  lifecycle_failed: true,
  op_token_missing: true,
  op_token_malformed: true,
  op_token_bad_signature: true,
  op_token_expired: true,
  op_token_replayed: true,
  op_token_mismatch: true,
  op_token_duplicate_signers: true,
  op_token_unknown_signer: true,
  op_token_insufficient_signers: true,
  audit_unavailable: true,
  artifact_quota_exceeded: true,
};
export const ERROR_CODES = Object.keys(CODES) as GatewayErrorCode[];

const KINDS: Record<ErrorKind, true> = {
  ADMISSION_REJECT: true,
  QUEUE_FULL_DROP_LRU: true,
  INVALID_PARAMS: true,
  POOL_UNREADY: true,
  POOL_UNAVAILABLE: true,
  REPLICA_EXHAUSTED: true,
  DECODE_TIMEOUT: true,
  WORKER_RESET: true,
  INTERNAL: true,
};

const RATE_LIMIT = { limit: 60, remaining: 0, resetAt: Date.UTC(2026, 10, 22, 20, 51), retryAfterMs: 12_000 };

/**
 * A representative error of every code, built with the gateway's own factories so the examples
 * are the bodies the gateway really writes (`errorBody`).
 */
export const SAMPLE_ERRORS: Record<GatewayErrorCode, GatewayError> = {
  invalid_request: Errors.invalidRequest('Request body is not valid JSON'),
  model_not_found: Errors.modelNotFound('gpt-5'),
  unknown_model: Errors.unknownModel(Errors.modelNotFound('gpt-5')),
  capability_mismatch: Errors.capabilityMismatch('llama3:8b', ['vision']),
  fallback_exhausted: Errors.fallbackExhausted(['gpt-4', 'llama3:8b']),
  no_healthy_worker: Errors.noHealthyWorker('llama3:8b', 5000),
  invalid_params: Errors.invalidParams("Unknown provider 'gpu-z' in x-switchboard-provider", 'x-switchboard-provider'),
  pool_unready: Errors.poolUnready('local', 'no eligible worker'),
  pool_unavailable: Errors.poolUnavailable('local'),
  model_not_allowed: Errors.modelNotAllowed('llama3:70b'),
  rate_limit_exceeded: Errors.rateLimitExceeded('requests', RATE_LIMIT, 'community-x'),
  budget_exceeded: Errors.budgetExceeded({ ...RATE_LIMIT, limit: 1_000_000, resetAt: Date.UTC(2026, 10, 23), retryAfterMs: 11_400_000 }),
  context_exceeded: Errors.contextExceeded({ promptTokens: 7900, maxTokens: 512, model: 'llama3:8b' }),
  session_budget_exceeded: Errors.sessionBudgetExceeded({ budget: 'tokens', limit: 100_000, used: 99_800, requested: 600 }),
  queue_full: Errors.queueFull(1500, 100, 840),
  queue_timeout: Errors.queueTimeout().with({ retryAfterMs: 1000, fields: { pool_id: 'local' } }),
  request_timeout: Errors.requestTimeout().with({ retryAfterMs: 1000, fields: { pool_id: 'local', engine: 'vllm' } }),
  requeue_exhausted: Errors.requeueExhausted().with({ retryAfterMs: 1000, fields: { pool_id: 'local' } }),
  provider_disabled: Errors.providerDisabled().with({ retryAfterMs: 1000, fields: { pool_id: 'local' } }),
  provider_not_found: Errors.providerNotFound(),
  provider_deleted: Errors.providerDeleted().with({ retryAfterMs: 1000, fields: { pool_id: 'local' } }),
  drain_timeout: Errors.drainTimeout().with({ retryAfterMs: 1000, fields: { pool_id: 'local', engine: 'vllm' } }),
  worker_error: Errors.workerError().with({ retryAfterMs: 1000, fields: { pool_id: 'local', engine: 'vllm' } }),
  worker_disconnected: Errors.workerDisconnected().with({ retryAfterMs: 1000, fields: { pool_id: 'local' } }),
  stream_too_large: Errors.streamTooLarge(),
  client_too_slow: Errors.clientTooSlow(),
  // What the exception filter answers for Fastify's body limit.
  payload_too_large: new GatewayError('payload_too_large', 'Request body is too large'),
  server_shutdown: Errors.serverShutdown().with({ retryAfterMs: 1000 }),
  gateway_overloaded: Errors.gatewayOverloaded(),
  artifact_quota_exceeded: Errors.artifactQuotaExceeded(1073741824, 1073000000, 800000),
  too_many_connections: Errors.tooManyConnections(),
  unauthorized: new GatewayError('unauthorized', 'Invalid or missing admin token'),
  invalid_api_key: Errors.invalidApiKey(),
  tenant_mismatch: new GatewayError(
    'tenant_mismatch',
    "This API key belongs to tenant 'team-a'; x-tenant-id 'team-b' cannot override it (send the key's tenant or no x-tenant-id)",
    { param: 'x-tenant-id' },
  ),
  auth_rate_limited: Errors.authRateLimited(60_000),
  forbidden: new GatewayError('forbidden', 'Admin API is disabled: no admin token is configured'),
  not_found: Errors.notFound('Pool', 'gpu-z'),
  conflict: Errors.conflict("Provider 'gpu-a' already exists"),
  validation_failed: Errors.validationFailed([{ field: 'deadline_ms', message: 'deadline_ms must not be less than 1' }]),
  internal_error: new GatewayError('internal_error', 'Internal error'),
  dependency_unavailable: Errors.dependencyUnavailable(),
  lifecycle_disabled: Errors.lifecycleDisabled(),
  lifecycle_unsupported: Errors.lifecycleUnsupported(
    "Worker 'gpu-node-1' did not negotiate model_lifecycle: its daemon cannot load, unload or flush (upgrade switchboard-worker)",
  ),
  lifecycle_failed: Errors.lifecycleFailed("model-unload of 'llama3:8b' did not complete on 1 of 1 worker(s)", [
    { workerId: 'w-7c9e6679-7425-40de-944b-e07fc1f90ae7', name: 'gpu-node-1', pool: 'local', status: 'failed', error: 'backend refused: model is pinned' },
  ]),
  op_token_missing: Errors.opTokenMissing(),
  op_token_malformed: Errors.opTokenMalformed('not base64url'),
  op_token_bad_signature: Errors.opTokenBadSignature(),
  op_token_expired: Errors.opTokenExpired(412, 300),
  op_token_replayed: Errors.opTokenReplayed(),
  op_token_mismatch: Errors.opTokenMismatch('modelId', 'llama3:70b', 'llama3:8b'),
  op_token_duplicate_signers: Errors.opTokenDuplicateSigners(['alice']),
  op_token_unknown_signer: Errors.opTokenUnknownSigner(['mallory']),
  op_token_insufficient_signers: Errors.opTokenInsufficientSigners(1, 2, 3),
  audit_unavailable: Errors.auditUnavailable(),
};

/** The dialects' `type` values, as `errorBody` maps every code. */
function typesOf(dialect: Dialect): string[] {
  const types = ERROR_CODES.map((code) => (errorBody(dialect, SAMPLE_ERRORS[code]).error as { type: string }).type);
  return [...new Set(types)].sort();
}

/** Fields the gateway adds beside `code` and `retriable` (the same in both dialects). */
const EXTRA_FIELDS: Record<string, SchemaObject> = {
  kind: { type: 'string', enum: Object.keys(KINDS), description: "The error's class in the taxonomy." },
  retriable: { type: 'boolean', description: 'Whether the same request may succeed later; only 4xx caused by the request itself are `false`.' },
  retry_after_ms: { type: 'integer', minimum: 0, description: 'Every retriable error: how long to wait (also `Retry-After` and `X-Backoff-Ms`).' },
  policy_label: { type: 'string', description: '`queue_full`: which bound refused the request.' },
  pool_id: { type: 'string', description: 'Errors that happen once a pool (provider) was chosen.' },
  engine: { type: 'string', description: "The worker's inference server (e.g. `vllm`), when a worker had the request." },
  missing: { type: 'array', items: { type: 'string' }, description: '`capability_mismatch`, `fallback_exhausted`: capabilities no worker has.' },
  attempted_models: { type: 'array', items: { type: 'string' }, description: '`fallback_exhausted`: the chain that was tried.' },
  limit: { type: 'integer', description: '`rate_limit_exceeded`, `budget_exceeded`.' },
  remaining: { type: 'integer', description: '`rate_limit_exceeded`, `budget_exceeded`.' },
  reset_at: { type: 'string', format: 'date-time', description: '`rate_limit_exceeded`, `budget_exceeded`.' },
  queue_depth: { type: 'integer', description: '`queue_full`.' },
  queueDepth: { type: 'integer', description: "`queue_full`: the model-runner seed's name for `queue_depth`." },
  avgWaitMs: { type: 'number', description: "`queue_full`: the model-runner seed's name for `avg_wait_ms`." },
  resetAt: { type: 'integer', description: "`rate_limit_exceeded`, `budget_exceeded`: the model-runner seed's `reset_at`, in epoch seconds." },
  check: {
    type: 'string',
    description:
      'Task admission (`POST /v1/tasks`): which check refused the task — `params`, `model`, `pool`, `context`, `session_tokens`, `session_time`, `rate_limit`, `tenant_budget`, `queue`, `capabilities`.',
  },
  avg_wait_ms: { type: 'number', description: '`queue_full`.' },
  fields: {
    type: 'array',
    description: '`validation_failed`: one entry per field (nested fields dotted).',
    items: { type: 'object', required: ['field', 'message'], properties: { field: { type: 'string' }, message: { type: 'string' } } },
  },
  problems: { type: 'array', items: { type: 'string' }, description: 'Configuration reloads: every problem found (nothing was applied).' },
  task_id: { type: 'string', description: '`conflict` of a lifecycle operation: the task already running.' },
  worker_id: { type: 'string', description: '`model_not_found` of a load on a named worker.' },
  workers: {
    type: 'array',
    items: { type: 'object', additionalProperties: true },
    description: '`lifecycle_failed`: how the operation ended on each worker (`workerId`, `name`, `pool`, `status`, `error`).',
  },
};

export const ERROR_SCHEMAS: Record<string, SchemaObject> = {
  OpenAIError: {
    type: 'object',
    description: 'An error in the OpenAI dialect (every route but `/v1/messages`, admin and pool routes included).',
    required: ['error'],
    properties: {
      error: {
        type: 'object',
        required: ['message', 'type', 'code', 'param', 'kind', 'retriable'],
        properties: {
          message: { type: 'string', description: 'Stable and sanitized: no worker names, addresses or backend error text.' },
          type: { type: 'string', enum: typesOf('openai') },
          code: { type: 'string', enum: ERROR_CODES },
          param: { type: 'string', nullable: true, description: 'The parameter or header at fault, when one is.' },
          ...EXTRA_FIELDS,
        },
        additionalProperties: true,
      },
    },
  },
  AnthropicError: {
    type: 'object',
    description: 'An error in the Anthropic dialect (`/v1/messages`).',
    required: ['type', 'error'],
    properties: {
      type: { type: 'string', enum: ['error'] },
      error: {
        type: 'object',
        required: ['type', 'message', 'code', 'kind', 'retriable'],
        properties: {
          type: { type: 'string', enum: typesOf('anthropic') },
          message: { type: 'string', description: 'Stable and sanitized: no worker names, addresses or backend error text.' },
          code: { type: 'string', enum: ERROR_CODES },
          ...EXTRA_FIELDS,
        },
        additionalProperties: true,
      },
    },
  },
};

const SCHEMA_OF: Record<Dialect, string> = { openai: 'OpenAIError', anthropic: 'AnthropicError' };

/**
 * The error responses of a route: its codes grouped by status, each with the body the gateway
 * writes for it as a named example, and `Retry-After` / `X-Backoff-Ms` where they are sent.
 */
export function errorResponses(
  dialect: Dialect,
  codes: GatewayErrorCode[],
  overrides: Partial<Record<GatewayErrorCode, GatewayError>> = {},
): Record<number, ResponseDoc> {
  const byStatus = new Map<number, GatewayErrorCode[]>();
  for (const code of codes) byStatus.set(statusOf(code), [...(byStatus.get(statusOf(code)) ?? []), code]);
  const out: Record<number, ResponseDoc> = {};
  for (const [status, group] of [...byStatus].sort(([a], [b]) => a - b)) {
    const errors = group.map((code) => overrides[code] ?? SAMPLE_ERRORS[code]);
    const withHints = errors.some((e) => Object.keys(errorHeaders(e)).length > 0);
    out[status] = {
      description: group.map((c) => `\`${c}\``).join(', '),
      ...(withHints ? { headers: { 'Retry-After': HEADERS.retryAfter, 'X-Backoff-Ms': HEADERS.backoffMs } } : {}),
      content: json(ref(SCHEMA_OF[dialect]), Object.fromEntries(errors.map((e) => [e.code, { summary: e.message, value: errorBody(dialect, e) }]))),
    };
  }
  return out;
}

/** The error responses every admin and pool route shares. */
export const ADMIN_AUTH_CODES: GatewayErrorCode[] = ['unauthorized', 'forbidden'];

/** The error responses of an admin route: the given codes plus the admin-token ones, in the OpenAI dialect. */
export const adminErrors = (codes: Parameters<typeof errorResponses>[1] = [], overrides?: Parameters<typeof errorResponses>[2]) =>
  errorResponses('openai', [...codes, ...ADMIN_AUTH_CODES], overrides);

/** Answers of API-key authentication (routes that do not queue). */
export const CLIENT_AUTH_ERRORS: GatewayErrorCode[] = ['invalid_request', 'invalid_api_key', 'auth_rate_limited'];
