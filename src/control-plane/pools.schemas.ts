import type { SchemaObject } from '@nestjs/swagger';
import { Errors, GatewayError } from '../common/gateway-error';
import { errorBody } from '../common/error-dialect';
import type { OperationDoc, XExample } from '../common/api-doc';
import { ADMIN_SECURITY, CLIENT_HEADERS, CLIENT_SECURITY, ISO_TIME, json, jsonResponse, pathParam, ref, TAGS } from '../common/doc-common';
import { adminErrors, CLIENT_AUTH_ERRORS, errorResponses } from '../common/doc-errors';

/** OpenAPI of `/v1/pools/*` (pools.controller.ts) and `/v1/capabilities` (capabilities.controller.ts). */

const poolHealthExample = (draining: boolean) => ({
  id: 'gpu-a',
  live: true,
  ready: !draining,
  draining,
  enabled: true,
  cordon: draining ? { since: '2026-11-22T20:50:00.000Z', reason: 'maintenance', deadline_ms: 60000 } : null,
  metrics: {
    queue_depth: 0,
    in_flight: draining ? 2 : 3,
    slots: { total: draining ? 0 : 8, busy: draining ? 0 : 3, free: draining ? 0 : 5 },
    workers: 2,
    requests_per_min: 42,
    error_rate: 0.024,
  },
});

export const CAPABILITIES_EXAMPLE = {
  api_version: '0.1.0',
  generated_at: '2026-11-22T20:50:00.000Z',
  pools: [
    {
      id: 'local',
      engines: [{ type: 'llama-server', version: 'b4500' }],
      engine: 'llama-server',
      engine_version: 'b4500',
      ctx_max: 32768,
      max_tokens_out: 32768,
      slots: { total: 4, busy: 1, free: 3 },
      workers: 1,
      supported_workloads: ['/v1/chat/completions', '/v1/completions'],
      models: { loaded: [{ id: 'llama3:8b', context_length: 8192, capabilities: ['tools'], workers: 1 }], loading: [], available: ['declared-but-not-served'] },
      queue: { depth: 0, max_depth: 100, avg_wait_ms: 0, p95_wait_ms: 0 },
      rate_limits: { default_rpm: 60, per_tenant: true },
      features: [
        'streaming',
        'cancellation',
        'openai',
        'anthropic',
        'aliases',
        'fallbacks',
        'priorities',
        'tenant_fairness',
        'tasks',
        'completions',
        'tools',
        'pinning',
      ],
      health: { enabled: true, ready: true },
    },
  ],
};

const nullableMs: SchemaObject = { type: 'integer', nullable: true };
const ONE_OR_MANY: SchemaObject = { oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }] };
const nullableSeries: SchemaObject = { type: 'array', items: nullableMs };

export const POOLS_SCHEMAS: Record<string, SchemaObject> = {
  LatencyPercentiles: {
    type: 'object',
    description: 'Duration of served requests over the last minute (null without samples).',
    required: ['p50', 'p90', 'p95', 'p99', 'samples'],
    properties: { p50: nullableMs, p90: nullableMs, p95: nullableMs, p99: nullableMs, samples: { type: 'integer' } },
  },
  PoolHistory: {
    type: 'object',
    description: 'The last 5 minutes in buckets of `bucket_secs`, oldest first; the last bucket is still filling.',
    required: ['bucket_secs', 'start', 'requests', 'errors', 'latency_p50_ms', 'latency_p95_ms'],
    properties: {
      bucket_secs: { type: 'integer' },
      start: ISO_TIME,
      requests: { type: 'array', items: { type: 'integer' } },
      errors: { type: 'array', items: { type: 'integer' } },
      latency_p50_ms: nullableSeries,
      latency_p95_ms: nullableSeries,
    },
  },
  PoolHealth: {
    type: 'object',
    required: ['id', 'live', 'ready', 'draining', 'enabled', 'cordon', 'metrics'],
    properties: {
      id: { type: 'string' },
      live: { type: 'boolean', description: 'At least one worker is connected (draining ones included).' },
      ready: { type: 'boolean', description: 'Takes new requests: enabled, not cordoned, one worker neither draining nor ejected.' },
      draining: { type: 'boolean', description: 'Cordoned by an operator until undrain.' },
      enabled: { type: 'boolean' },
      cordon: {
        type: 'object',
        nullable: true,
        required: ['since', 'reason', 'deadline_ms'],
        properties: { since: ISO_TIME, reason: { type: 'string' }, deadline_ms: { type: 'integer' } },
      },
      metrics: {
        type: 'object',
        required: ['queue_depth', 'in_flight', 'slots', 'workers', 'requests_per_min', 'error_rate'],
        properties: {
          queue_depth: { type: 'integer' },
          in_flight: { type: 'integer' },
          slots: {
            type: 'object',
            required: ['total', 'busy', 'free'],
            properties: { total: { type: 'integer' }, busy: { type: 'integer' }, free: { type: 'integer' } },
          },
          workers: { type: 'integer' },
          requests_per_min: { type: 'integer' },
          error_rate: { type: 'number', minimum: 0, maximum: 1 },
        },
      },
    },
  },
  PoolList: { type: 'object', required: ['data'], properties: { data: { type: 'array', items: ref('PoolHealth') } } },
  DrainPool: {
    type: 'object',
    properties: {
      deadline_ms: {
        type: 'integer',
        minimum: 1,
        maximum: 86400000,
        description: 'Each worker gets this long to finish (default `SHUTDOWN_DRAIN_TIMEOUT_SECS`).',
      },
      reason: { type: 'string', maxLength: 200, description: 'Default `pool_drain`.' },
    },
    additionalProperties: false,
  },
  Capabilities: {
    type: 'object',
    required: ['api_version', 'generated_at', 'pools'],
    properties: {
      api_version: { type: 'string', description: "The gateway's API version: this document's `info.version`." },
      generated_at: ISO_TIME,
      pools: {
        type: 'array',
        items: {
          type: 'object',
          required: ['id', 'engines', 'slots', 'workers', 'supported_workloads', 'models', 'queue', 'rate_limits', 'features', 'health'],
          properties: {
            id: { type: 'string' },
            engines: { type: 'array', items: { type: 'object', required: ['type'], properties: { type: { type: 'string' }, version: { type: 'string' } } } },
            engine: { ...ONE_OR_MANY, description: "The workers' engine (`runner.type`, else the runner document's `runnerType`); a list when mixed." },
            engine_version: { ...ONE_OR_MANY, description: "The workers' engine version; a list when mixed." },
            sampler_profile_version: { ...ONE_OR_MANY, description: 'When a runner document reports it (`samplerProfileVersion`); a list when mixed.' },
            ctx_max: { type: 'integer' },
            max_tokens_out: { type: 'integer', description: 'The largest `maxTokensOut` a runner document reports, else `ctx_max`.' },
            prefixCaching: { type: 'boolean', description: 'From the runner documents: true when every worker reporting it says so.' },
            multiTenant: { type: 'boolean', description: 'From the runner documents: true when every worker reporting it says so.' },
            audioInput: { type: 'boolean', description: 'From the runner documents: true when every worker reporting it says so.' },
            resources: {
              type: 'object',
              description: "The runner documents' `resources`, summed over the workers that report them (KV utilisation weighted by KV cache size).",
              required: ['reporting_workers'],
              properties: {
                gpuMemoryTotalMB: { type: 'number' },
                gpuMemoryUsedMB: { type: 'number' },
                gpuMemoryFreeMB: { type: 'number' },
                kvCacheSizeMB: { type: 'number' },
                kvCacheUtilization: { type: 'number' },
                reporting_workers: { type: 'integer' },
              },
            },
            slots: {
              type: 'object',
              required: ['total', 'busy', 'free'],
              properties: { total: { type: 'integer' }, busy: { type: 'integer' }, free: { type: 'integer' } },
            },
            workers: { type: 'integer' },
            supported_workloads: { type: 'array', items: { type: 'string' } },
            models: {
              type: 'object',
              required: ['loaded', 'loading', 'available'],
              properties: {
                loaded: {
                  type: 'array',
                  items: {
                    type: 'object',
                    required: ['id', 'capabilities', 'workers'],
                    properties: {
                      id: { type: 'string' },
                      context_length: { type: 'integer' },
                      capabilities: { type: 'array', items: { type: 'string' } },
                      workers: { type: 'integer' },
                    },
                  },
                },
                loading: {
                  type: 'array',
                  items: {
                    type: 'object',
                    required: ['id', 'progress'],
                    properties: { id: { type: 'string' }, progress: { type: 'number' }, eta: { type: 'number' } },
                  },
                },
                available: { type: 'array', items: { type: 'string' } },
              },
            },
            queue: {
              type: 'object',
              required: ['depth', 'max_depth', 'avg_wait_ms', 'p95_wait_ms'],
              properties: { depth: { type: 'integer' }, max_depth: { type: 'integer' }, avg_wait_ms: { type: 'number' }, p95_wait_ms: { type: 'number' } },
            },
            rate_limits: {
              type: 'object',
              required: ['per_tenant'],
              properties: { default_rpm: { type: 'integer' }, default_tpm: { type: 'integer' }, per_tenant: { type: 'boolean' } },
            },
            features: { type: 'array', items: { type: 'string' } },
            health: { type: 'object', required: ['enabled', 'ready'], properties: { enabled: { type: 'boolean' }, ready: { type: 'boolean' } } },
            runners: {
              type: 'array',
              description: 'When any: the runner-API capability documents workers relayed from their backends, as the backends wrote them.',
              items: {
                type: 'object',
                required: ['worker', 'capabilities'],
                properties: { worker: { type: 'string' }, capabilities: { type: 'object', additionalProperties: true } },
              },
            },
          },
        },
      },
    },
  },
};

const poolId = pathParam('id', 'The pool (provider) name.', 'gpu-a');
const notFoundPool = Errors.notFound('Pool', 'gpu-z');
/** The body the gateway writes for an admin error. */
const body = (e: GatewayError) => errorBody('openai', e);

const DRAIN_POOL_EXAMPLES: Record<string, XExample> = {
  drain: {
    summary: 'Take a pool out of rotation: its workers finish within 60 s, and it stays cordoned until undrain',
    request: { path: '/v1/pools/gpu-a/drain', body: { deadline_ms: 60000, reason: 'maintenance' } },
    response: { status: 202, body: poolHealthExample(true) },
  },
  defaults: {
    summary: 'Without a body: deadline SHUTDOWN_DRAIN_TIMEOUT_SECS, reason `pool_drain`',
    request: { path: '/v1/pools/gpu-a/drain' },
    response: { status: 202, body: { ...poolHealthExample(true), cordon: { since: '2026-11-22T20:50:00.000Z', reason: 'pool_drain', deadline_ms: 30000 } } },
  },
  invalid: {
    summary: 'A field out of range',
    request: { path: '/v1/pools/gpu-a/drain', body: { deadline_ms: 0 } },
    response: { status: 422, body: body(Errors.validationFailed([{ field: 'deadline_ms', message: 'deadline_ms must not be less than 1' }])) },
  },
  unknown: {
    summary: 'An unknown pool (checked before the body)',
    request: { path: '/v1/pools/gpu-z/drain', body: {} },
    response: { status: 404, body: body(notFoundPool) },
  },
};

export const POOLS_API = {
  listPools: {
    operationId: 'listPools',
    summary: 'Health of every pool',
    tags: [TAGS.pools],
    security: ADMIN_SECURITY,
    responses: { 200: jsonResponse('The pools', ref('PoolList'), { data: [poolHealthExample(false)] }), ...adminErrors() },
  },
  poolHealth: {
    operationId: 'getPoolHealth',
    summary: "One pool's health",
    tags: [TAGS.pools],
    security: ADMIN_SECURITY,
    parameters: [poolId],
    responses: { 200: jsonResponse('Health', ref('PoolHealth'), poolHealthExample(false)), ...adminErrors(['not_found'], { not_found: notFoundPool }) },
  },
  drainPool: {
    operationId: 'drainPool',
    summary: 'Drain a pool and cordon it until undrain',
    description:
      'Every worker drains within `deadline_ms`; queued requests are routed again; new requests are served by other pools or answer ' +
      '`503 pool_unavailable`; connecting workers are refused with close `1013`.',
    tags: [TAGS.pools],
    security: ADMIN_SECURITY,
    parameters: [poolId],
    requestBody: {
      required: false,
      content: json(ref('DrainPool'), { typical: { summary: 'Drain within 60 s', value: DRAIN_POOL_EXAMPLES.drain.request.body } }),
    },
    responses: {
      202: jsonResponse('Draining: the health, cordoned', ref('PoolHealth'), poolHealthExample(true)),
      ...adminErrors(['invalid_request', 'not_found', 'validation_failed'], { not_found: notFoundPool }),
    },
    xExamples: DRAIN_POOL_EXAMPLES,
  },
  undrainPool: {
    operationId: 'undrainPool',
    summary: "Lift a pool's cordon",
    tags: [TAGS.pools],
    security: ADMIN_SECURITY,
    parameters: [poolId],
    responses: { 200: jsonResponse('The health', ref('PoolHealth'), poolHealthExample(false)), ...adminErrors(['not_found'], { not_found: notFoundPool }) },
  },
  capabilities: {
    operationId: 'getCapabilities',
    summary: 'What each pool can do right now',
    description:
      "Engines, models and their context, slots, endpoints, queue, limits and features; cached for at most 5 s. `api_version` equals this document's `info.version`.",
    tags: [TAGS.client],
    security: CLIENT_SECURITY,
    parameters: CLIENT_HEADERS,
    responses: {
      200: jsonResponse('The capabilities', ref('Capabilities'), CAPABILITIES_EXAMPLE),
      ...errorResponses('openai', [...CLIENT_AUTH_ERRORS, 'server_shutdown']),
    },
    xExamples: {
      discovery: {
        summary: 'One pool with one llama-server worker',
        request: { path: '/v1/capabilities' },
        response: { status: 200, body: CAPABILITIES_EXAMPLE },
      },
      shutting_down: {
        summary: 'While the gateway shuts down',
        request: { path: '/v1/capabilities' },
        response: {
          status: 503,
          headers: { 'retry-after': '1', 'x-backoff-ms': '1000' },
          body: {
            error: {
              message: 'The gateway is shutting down',
              type: 'server_error',
              code: 'server_shutdown',
              param: null,
              kind: 'POOL_UNAVAILABLE',
              retriable: true,
              retry_after_ms: 1000,
            },
          },
        },
      },
    },
  },
} satisfies Record<string, OperationDoc>;
