import type { HeaderObject, ParameterObject, ReferenceObject, SchemaObject, SecurityRequirementObject, SecuritySchemeObject, TagObject } from '@nestjs/swagger';
import type { MediaDoc, ResponseDoc } from './api-doc';

/** A reference to a schema of `components.schemas` (every name used must be defined there). */
export function ref(name: string): ReferenceObject {
  return { $ref: `#/components/schemas/${name}` };
}

export const TAGS = {
  client: 'Client',
  tasks: 'Tasks',
  providers: 'Admin: providers and workers',
  keys: 'Admin: API keys',
  tenants: 'Admin: tenants',
  usage: 'Admin: usage',
  config: 'Admin: configuration',
  lifecycle: 'Admin: model lifecycle',
  pools: 'Pools',
  health: 'Health and metrics',
  artifacts: 'Artifacts',
} as const;

export const TAG_OBJECTS: TagObject[] = [
  {
    name: TAGS.client,
    description:
      'OpenAI- and Anthropic-compatible endpoints. Bodies are forwarded to a worker unmodified (only `model` and `stream` are read, ' +
      "plus what routing needs); answers are the backend's, relayed faithfully. Errors the gateway itself raises use the caller's dialect: " +
      '`/v1/messages` the Anthropic one, every other route the OpenAI one.',
  },
  {
    name: TAGS.tasks,
    description:
      'Asynchronous tasks on the same queue, routing and workers: admission-checked submit, queue position and predicted start, SSE task events ' +
      '(`started`, `token`, `metrics`, `end`, `error`) with resume, race-free cancel and session budgets ([tasks](tasks.md)).',
  },
  { name: TAGS.providers, description: 'Providers (pools), connected workers, cordons and stats. Admin token required.' },
  { name: TAGS.keys, description: 'Client API keys. Admin token required.' },
  { name: TAGS.tenants, description: 'Per-tenant limits and settings. Admin token required.' },
  { name: TAGS.usage, description: 'Usage totals for chargeback. Admin token required.' },
  { name: TAGS.config, description: 'Configuration reload. Admin token required.' },
  {
    name: TAGS.lifecycle,
    description:
      'Model load, unload and cache flush relayed to workers, governed by a `verifiedOpToken` signed by M of N signers, and their audit trail. Admin token required.',
  },
  { name: TAGS.pools, description: 'Pool health, drain and undrain (control plane). Admin token required.' },
  { name: TAGS.health, description: 'Probes and Prometheus metrics. No authentication.' },
  {
    name: TAGS.artifacts,
    description:
      "Content-addressed artifacts of the caller's tenant: the record every task leaves, and plans, summaries, diffs, traces clients store. Client key as for the inference routes.",
  },
];

export const SECURITY_SCHEMES: Record<string, SecuritySchemeObject> = {
  AdminToken: {
    type: 'http',
    scheme: 'bearer',
    description:
      '`Authorization: Bearer $ADMIN_TOKEN`. A wrong or missing token is `401 unauthorized`; without a configured token every admin route is `403 forbidden`.',
  },
  ClientApiKey: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'sb-…',
    description: 'A client API key (`sb-…`) as `Authorization: Bearer <key>` (what the OpenAI SDKs send).',
  },
  ClientApiKeyHeader: {
    type: 'apiKey',
    in: 'header',
    name: 'x-api-key',
    description: 'A client API key (`sb-…`) as `x-api-key: <key>` (what the Anthropic SDKs send).',
  },
};

export const ADMIN_SECURITY: SecurityRequirementObject[] = [{ AdminToken: [] }];
/** A key in either header; `setupOpenApi` adds the anonymous alternative when keys are optional. */
export const CLIENT_SECURITY: SecurityRequirementObject[] = [{ ClientApiKey: [] }, { ClientApiKeyHeader: [] }];
export const NO_SECURITY: SecurityRequirementObject[] = [];

export function json(schema: SchemaObject | ReferenceObject, examples?: MediaDoc['examples']): { 'application/json': MediaDoc } {
  return { 'application/json': { schema, ...(examples ? { examples } : {}) } };
}

/** A JSON response with one example. */
export function jsonResponse(description: string, schema: SchemaObject | ReferenceObject, example?: unknown, headers?: ResponseDoc['headers']): ResponseDoc {
  return {
    description,
    ...(headers ? { headers } : {}),
    content: json(schema, example === undefined ? undefined : { example: { summary: description, value: example } }),
  };
}

export const HEADERS: Record<string, HeaderObject> = {
  correlationId: {
    description: "The client's `x-correlation-id` when it is a printable token of at most 128 characters, else a fresh UUIDv4.",
    schema: { type: 'string' },
  },
  retryAfter: { description: 'Seconds to wait before retrying.', schema: { type: 'integer', minimum: 1 } },
  backoffMs: { description: 'Milliseconds to wait before retrying (the `retry_after_ms` of the body).', schema: { type: 'integer', minimum: 0 } },
  queueWaitMs: { description: 'Milliseconds the request waited in the queue.', schema: { type: 'integer', minimum: 0 } },
  servingModel: { description: 'The model that served the request (alias target or fallback).', schema: { type: 'string' } },
  fallback: { description: 'The requested model, when a fallback model served the request.', schema: { type: 'string' } },
  rateLimit: {
    description: 'Present when a rate limit applies to the caller (also `-remaining-` and `-reset-`, for `requests` and `tokens`).',
    schema: { type: 'string' },
  },
};

/** Request headers every client route understands. */
export const CLIENT_HEADERS: ParameterObject[] = [
  {
    name: 'x-correlation-id',
    in: 'header',
    required: false,
    description: 'Echoed in `X-Correlation-Id` when it is a printable token of at most 128 characters.',
    schema: { type: 'string', maxLength: 128 },
  },
];

/** Request headers of the inference routes. */
export const INFERENCE_HEADERS: ParameterObject[] = [
  ...CLIENT_HEADERS,
  {
    name: 'x-tenant-id',
    in: 'header',
    required: false,
    description:
      "The caller's tenant (1-64 characters of `A-Z a-z 0-9 . _ -`). With an API key it may only repeat the key's tenant (else `403 tenant_mismatch`). Without a key it may not name a tenant that has API keys (`401 invalid_api_key`).",
    schema: { type: 'string', pattern: '^[A-Za-z0-9._-]{1,64}$' },
  },
  {
    name: 'x-priority',
    in: 'header',
    required: false,
    description: "Queue priority, capped at the tenant's `max_priority`.",
    schema: { type: 'string', enum: ['high', 'normal', 'low'] },
  },
  {
    name: 'x-switchboard-provider',
    in: 'header',
    required: false,
    description: 'Pins the request to one provider (pool) when pinning is enabled; not forwarded to the worker.',
    schema: { type: 'string' },
  },
];

export function pathParam(name: string, description: string, example: string): ParameterObject {
  return { name, in: 'path', required: true, description, schema: { type: 'string' }, example };
}

/** A timestamp as the API writes it (`Date.toISOString()`). */
export const ISO_TIME: SchemaObject = { type: 'string', format: 'date-time' };
export const NULLABLE_ISO_TIME: SchemaObject = { type: 'string', format: 'date-time', nullable: true };
