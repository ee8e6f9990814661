import type { SchemaObject } from '@nestjs/swagger';
import { Errors, GatewayError } from '../common/gateway-error';
import { rejectedWithProblems } from './pool-reload';
import { errorBody } from '../common/error-dialect';
import type { OperationDoc, XExample } from '../openapi/api-doc';
import { ADMIN_SECURITY, CLIENT_HEADERS, CLIENT_SECURITY, ISO_TIME, json, jsonResponse, NULLABLE_ISO_TIME, pathParam, ref, TAGS } from '../openapi/doc-common';
import { ADMIN_AUTH_CODES, errorResponses } from '../openapi/doc-errors';
import { CLIENT_AUTH_ERRORS } from '../inference/inference.schemas';

/** Admin providers/workers/cordons/stats, `/v1/pools/*`, `/v1/capabilities` and the reload routes. */

const capabilities: SchemaObject = {
  type: 'object',
  properties: { vision: { type: 'boolean' }, tools: { type: 'boolean' }, json_mode: { type: 'boolean' }, context_length: { type: 'integer', minimum: 1 } },
  additionalProperties: false,
};

const providerFields: Record<string, SchemaObject> = {
  secret: { type: 'string', minLength: 8, writeOnly: true, description: 'The secret its workers present; only a hash is stored.' },
  enabled: { type: 'boolean', description: '`false` refuses new workers and answers `503 provider_disabled`.' },
  max_queue_len: { type: 'integer', minimum: 0 },
  queue_timeout_secs: { type: 'number', minimum: 0.001, maximum: 2147483 },
  request_timeout_secs: { type: 'number', minimum: 0.001, maximum: 2147483 },
  max_models: { type: 'integer', minimum: 1 },
  models: { type: 'array', maxItems: 10000, items: { type: 'string' }, description: 'Exact names and `*` globs: the models this provider\'s workers may serve (its allow-list; a model a provider lists belongs to the providers that list it). Exact names are declared even while no worker serves them. Empty = any model no provider lists.' },
  priority: { type: 'integer', minimum: 0, nullable: true, description: 'Routing priority of its workers (lower is preferred); `null` clears it.' },
  capabilities: { type: 'object', additionalProperties: ref('ModelCapabilities'), description: 'Per model; overrides what the workers declare.' },
};

const poolHealthExample = (draining: boolean) => ({
  id: 'gpu-a',
  live: true,
  ready: !draining,
  draining,
  enabled: true,
  cordon: draining ? { since: '2026-11-22T20:50:00.000Z', reason: 'maintenance', deadline_ms: 60000 } : null,
  metrics: { queue_depth: 0, in_flight: draining ? 2 : 3, slots: { total: draining ? 0 : 8, busy: draining ? 0 : 3, free: draining ? 0 : 5 }, workers: 2, requests_per_min: 42, error_rate: 0.024 },
});

const WORKER_EXAMPLE = {
  id: 'w-7c9e6679-7425-40de-944b-e07fc1f90ae7',
  name: 'gpu-node-1',
  provider: 'gpu-a',
  models: ['llama3:8b'],
  capabilities: { 'llama3:8b': { tools: true, context_length: 8192 } },
  endpoints: null,
  runner: { type: 'vllm', version: '0.6.3' },
  priority: 100,
  max_concurrent: 4,
  in_flight: 1,
  held_slots: 0,
  load: 1,
  draining: true,
  cordoned: true,
  cordon: 'worker',
  latency_ms: 180,
  consecutive_failures: 0,
  ejected: false,
  ejected_until: null,
  connected_at: '2026-11-22T18:02:11.000Z',
  last_seen_at: '2026-11-22T20:49:58.000Z',
};

export const CAPABILITIES_EXAMPLE = {
  api_version: '0.1.0',
  generated_at: '2026-11-22T20:50:00.000Z',
  pools: [
    {
      id: 'local',
      engines: [{ type: 'llama-server', version: 'b4500' }],
      ctx_max: 32768,
      slots: { total: 4, busy: 1, free: 3 },
      workers: 1,
      supported_workloads: ['/v1/chat/completions', '/v1/completions'],
      models: { loaded: [{ id: 'llama3:8b', context_length: 8192, capabilities: ['tools'], workers: 1 }], loading: [], available: ['declared-but-not-served'] },
      queue: { depth: 0, max_depth: 100, avg_wait_ms: 0, p95_wait_ms: 0 },
      rate_limits: { default_rpm: 60, per_tenant: true },
      features: ['streaming', 'cancellation', 'openai', 'anthropic', 'aliases', 'fallbacks', 'priorities', 'tenant_fairness', 'tasks', 'completions', 'tools', 'pinning'],
      health: { enabled: true, ready: true },
    },
  ],
};

const byCode: SchemaObject = { type: 'object', additionalProperties: { type: 'integer' } };
const names: SchemaObject = { type: 'array', items: { type: 'string' } };
function nameChanges(...more: string[]): SchemaObject {
  const keys = ['added', 'updated', 'removed', ...more];
  return { type: 'object', required: keys, properties: Object.fromEntries(keys.map((k) => [k, names])) };
}
const nullableMs: SchemaObject = { type: 'integer', nullable: true };
const rates: Record<string, SchemaObject> = { requests_per_min: { type: 'integer' }, error_rate: { type: 'number', minimum: 0, maximum: 1 } };
const ratesFigures = ['requests_per_min', 'error_rate', 'latency_ms', 'history'];
const nullableSeries: SchemaObject = { type: 'array', items: nullableMs };

const HISTORY_EXAMPLE = {
  bucket_secs: 10,
  start: '2026-05-01T09:55:10.000Z',
  requests: [7, 6, 8],
  errors: [0, 1, 0],
  latency_p50_ms: [170, 190, null],
  latency_p95_ms: [640, 900, null],
};

export const CONTROL_PLANE_SCHEMAS: Record<string, SchemaObject> = {
  ModelCapabilities: capabilities,
  CreateProvider: {
    type: 'object',
    required: ['name'],
    properties: { name: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$' }, ...providerFields },
    additionalProperties: false,
  },
  UpdateProvider: { type: 'object', properties: providerFields, additionalProperties: false },
  Provider: {
    type: 'object',
    required: ['name', 'enabled', 'source', 'has_secret', 'max_queue_len', 'queue_timeout_secs', 'request_timeout_secs', 'max_models', 'models', 'priority', 'capabilities', 'aliases', 'workers_connected', 'queue_depth'],
    properties: {
      name: { type: 'string' },
      enabled: { type: 'boolean' },
      source: { type: 'string', enum: ['config', 'admin'], description: '`config` providers are rewritten at every boot.' },
      has_secret: { type: 'boolean' },
      max_queue_len: { type: 'integer' },
      queue_timeout_secs: { type: 'number' },
      request_timeout_secs: { type: 'number' },
      max_models: { type: 'integer' },
      models: { type: 'array', items: { type: 'string' } },
      priority: { type: 'integer', nullable: true },
      capabilities: { type: 'object', additionalProperties: ref('ModelCapabilities') },
      aliases: { type: 'object', additionalProperties: { type: 'string' }, description: 'Pool aliases (`POST /v1/pools/{id}/reload`).' },
      workers_connected: { type: 'integer' },
      queue_depth: { type: 'integer' },
    },
  },
  ProviderList: { type: 'object', required: ['data'], properties: { data: { type: 'array', items: ref('Provider') } } },
  ProviderDeleted: {
    type: 'object',
    required: ['deleted'],
    properties: { deleted: { type: 'string' }, source: { type: 'string', enum: ['config'] }, note: { type: 'string' } },
  },
  Worker: {
    type: 'object',
    required: ['id', 'name', 'provider', 'models', 'capabilities', 'endpoints', 'runner', 'priority', 'max_concurrent', 'in_flight', 'held_slots', 'load', 'draining', 'cordoned', 'cordon', 'latency_ms', 'consecutive_failures', 'ejected', 'ejected_until', 'connected_at', 'last_seen_at'],
    properties: {
      id: { type: 'string' },
      name: { type: 'string' },
      provider: { type: 'string' },
      models: { type: 'array', items: { type: 'string' } },
      capabilities: { type: 'object', additionalProperties: ref('ModelCapabilities'), description: 'Effective capabilities per model.' },
      endpoints: { type: 'array', items: { type: 'string' }, nullable: true },
      runner: { type: 'object', nullable: true, required: ['type'], properties: { type: { type: 'string' }, version: { type: 'string' } } },
      priority: { type: 'integer' },
      max_concurrent: { type: 'integer' },
      in_flight: { type: 'integer' },
      held_slots: { type: 'integer' },
      load: { type: 'integer' },
      draining: { type: 'boolean' },
      cordoned: { type: 'boolean' },
      cordon: { type: 'string', enum: ['pool', 'worker'], nullable: true },
      latency_ms: { type: 'integer', nullable: true, description: 'Average time to first byte.' },
      consecutive_failures: { type: 'integer' },
      ejected: { type: 'boolean' },
      ejected_until: NULLABLE_ISO_TIME,
      connected_at: ISO_TIME,
      last_seen_at: ISO_TIME,
    },
  },
  WorkerDetail: {
    allOf: [
      ref('Worker'),
      {
        type: 'object',
        required: ['in_flight_request_ids', 'held_request_ids'],
        properties: { in_flight_request_ids: { type: 'array', items: { type: 'string' } }, held_request_ids: { type: 'array', items: { type: 'string' } } },
      },
    ],
  },
  WorkerList: { type: 'object', required: ['data'], properties: { data: { type: 'array', items: ref('Worker') } } },
  DrainWorker: {
    type: 'object',
    properties: {
      timeout_secs: { type: 'number', minimum: 0.001, maximum: 86400, description: 'Seconds to finish in-flight work (default `SHUTDOWN_DRAIN_TIMEOUT_SECS`).' },
      reason: { type: 'string', maxLength: 200 },
    },
    additionalProperties: false,
  },
  WorkerUndrained: {
    type: 'object',
    required: ['id', 'provider', 'name', 'undrained', 'connected'],
    properties: {
      id: { type: 'string' },
      provider: { type: 'string' },
      name: { type: 'string' },
      undrained: { type: 'boolean', description: '`false`: the name was not cordoned.' },
      connected: { type: 'boolean' },
    },
  },
  Cordons: {
    type: 'object',
    required: ['pools', 'workers'],
    properties: {
      pools: {
        type: 'array',
        items: { type: 'object', required: ['pool', 'since', 'reason', 'deadline_ms'], properties: { pool: { type: 'string' }, since: ISO_TIME, reason: { type: 'string' }, deadline_ms: { type: 'integer' } } },
      },
      workers: {
        type: 'array',
        items: {
          type: 'object',
          required: ['provider', 'name', 'since', 'reason', 'worker_ids'],
          properties: { provider: { type: 'string' }, name: { type: 'string' }, since: ISO_TIME, reason: { type: 'string' }, worker_ids: { type: 'array', items: { type: 'string' } } },
        },
      },
    },
  },
  Stats: {
    type: 'object',
    required: ['since', 'pools', 'unrouted'],
    properties: {
      since: ISO_TIME,
      pools: {
        type: 'array',
        items: {
          type: 'object',
          required: ['pool', 'draining', 'workers', 'queue_depth', 'in_flight', 'served', 'cancelled', 'rejected_by_code', 'errors_by_code', 'queue_wait_ms', 'tokens', ...ratesFigures],
          properties: {
            pool: { type: 'string' },
            draining: { type: 'boolean' },
            workers: { type: 'integer' },
            queue_depth: { type: 'integer' },
            in_flight: { type: 'integer' },
            served: { type: 'integer' },
            cancelled: { type: 'integer' },
            rejected_by_code: byCode,
            errors_by_code: byCode,
            queue_wait_ms: { type: 'object', required: ['avg', 'p95'], properties: { avg: { type: 'number' }, p95: { type: 'number' } } },
            tokens: { type: 'object', required: ['prompt', 'completion', 'total'], properties: { prompt: { type: 'integer' }, completion: { type: 'integer' }, total: { type: 'integer' } } },
            ...rates,
            latency_ms: ref('LatencyPercentiles'),
            history: ref('PoolHistory'),
          },
        },
      },
      unrouted: { type: 'object', required: ['rejected_by_code', 'errors_by_code'], properties: { rejected_by_code: byCode, errors_by_code: byCode } },
      overall: {
        type: 'object',
        description: 'The same figures over every finished request (every pool and the unrouted ones).',
        required: ratesFigures,
        properties: { ...rates, latency_ms: ref('LatencyPercentiles'), history: ref('PoolHistory') },
      },
      recent_errors: {
        type: 'array',
        description: 'The last 50 error answers of the whole gateway, newest first (gateway errors and backend 5xx).',
        items: {
          type: 'object',
          required: ['at', 'pool', 'status', 'code', 'message', 'correlation_id', 'model', 'tenant', 'worker_id'],
          properties: {
            at: ISO_TIME,
            pool: { type: 'string', nullable: true },
            status: { type: 'integer' },
            code: { type: 'string', nullable: true, description: 'null when the backend answered the 5xx.' },
            message: { type: 'string', nullable: true },
            correlation_id: { type: 'string', nullable: true },
            model: { type: 'string', nullable: true },
            tenant: { type: 'string', nullable: true },
            worker_id: { type: 'string', nullable: true },
          },
        },
      },
    },
  },
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
          slots: { type: 'object', required: ['total', 'busy', 'free'], properties: { total: { type: 'integer' }, busy: { type: 'integer' }, free: { type: 'integer' } } },
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
      deadline_ms: { type: 'integer', minimum: 1, maximum: 86400000, description: 'Each worker gets this long to finish (default `SHUTDOWN_DRAIN_TIMEOUT_SECS`).' },
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
            ctx_max: { type: 'integer' },
            slots: { type: 'object', required: ['total', 'busy', 'free'], properties: { total: { type: 'integer' }, busy: { type: 'integer' }, free: { type: 'integer' } } },
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
                    properties: { id: { type: 'string' }, context_length: { type: 'integer' }, capabilities: { type: 'array', items: { type: 'string' } }, workers: { type: 'integer' } },
                  },
                },
                loading: { type: 'array', items: { type: 'object', required: ['id', 'progress'], properties: { id: { type: 'string' }, progress: { type: 'number' }, eta: { type: 'number' } } } },
                available: { type: 'array', items: { type: 'string' } },
              },
            },
            queue: {
              type: 'object',
              required: ['depth', 'max_depth', 'avg_wait_ms', 'p95_wait_ms'],
              properties: { depth: { type: 'integer' }, max_depth: { type: 'integer' }, avg_wait_ms: { type: 'number' }, p95_wait_ms: { type: 'number' } },
            },
            rate_limits: { type: 'object', required: ['per_tenant'], properties: { default_rpm: { type: 'integer' }, default_tpm: { type: 'integer' }, per_tenant: { type: 'boolean' } } },
            features: { type: 'array', items: { type: 'string' } },
            health: { type: 'object', required: ['enabled', 'ready'], properties: { enabled: { type: 'boolean' }, ready: { type: 'boolean' } } },
            runners: {
              type: 'array',
              description: 'When any: the runner-API capability documents workers relayed from their backends, as the backends wrote them.',
              items: { type: 'object', required: ['worker', 'capabilities'], properties: { worker: { type: 'string' }, capabilities: { type: 'object', additionalProperties: true } } },
            },
          },
        },
      },
    },
  },
  ReloadResult: {
    type: 'object',
    required: ['reloaded', 'config_file', 'changes', 'restart_required', 'warnings'],
    properties: {
      reloaded: { type: 'boolean', enum: [true] },
      config_file: { type: 'string', nullable: true },
      changes: {
        type: 'object',
        description: 'What the reload changed, by part: names added, updated and removed; `routing` has one entry per changed key, `{from, to}` or `{added, updated, removed}`.',
        properties: {
          providers: nameChanges(),
          tenants: nameChanges('overridden'),
          routing: { type: 'object', additionalProperties: { type: 'object', additionalProperties: true } },
        },
        additionalProperties: true,
      },
      restart_required: { type: 'array', items: { type: 'string' }, description: 'Changed settings that need a restart (by YAML key): not applied.' },
      warnings: { type: 'array', items: { type: 'string' } },
    },
  },
  PoolReload: {
    type: 'object',
    description: 'A field left out keeps its value; a field given replaces it as a whole (`{}` or `[]` clears it; `null` is refused).',
    properties: {
      models: { type: 'array', maxItems: 10000, items: { type: 'string', minLength: 1, maxLength: 256 }, description: "The pool's declared models." },
      aliases: { type: 'object', additionalProperties: { type: 'string' }, description: "Pool aliases, `{alias: target}`: each target a model of the pool; single level." },
      capabilities: { type: 'object', additionalProperties: ref('ModelCapabilities'), description: 'Per-model capability declarations (`"*"` for every model).' },
    },
    additionalProperties: false,
  },
  PoolDeclarations: {
    type: 'object',
    required: ['id', 'models', 'aliases', 'capabilities'],
    description: "The pool's declarations after the reload.",
    properties: {
      id: { type: 'string' },
      models: { type: 'array', items: { type: 'string' } },
      aliases: { type: 'object', additionalProperties: { type: 'string' } },
      capabilities: { type: 'object', additionalProperties: ref('ModelCapabilities') },
    },
    additionalProperties: false,
  },
};

const admin = (codes: Parameters<typeof errorResponses>[1] = [], overrides?: Parameters<typeof errorResponses>[2]) =>
  errorResponses('openai', [...codes, ...ADMIN_AUTH_CODES], overrides);
const poolId = pathParam('id', 'The pool (provider) name.', 'gpu-a');
const workerId = pathParam('id', "The worker's connection id (`GET /admin/workers`).", WORKER_EXAMPLE.id);
const providerName = pathParam('name', 'The provider name.', 'gpu-a');

const notFoundPool = Errors.notFound('Pool', 'gpu-z');
const notFoundWorker = Errors.notFound('Worker', 'no-such-worker');
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
  unknown: { summary: 'An unknown pool (checked before the body)', request: { path: '/v1/pools/gpu-z/drain', body: {} }, response: { status: 404, body: body(notFoundPool) } },
};

const DRAIN_WORKER_EXAMPLES: Record<string, XExample> = {
  drain: {
    summary: "Drain a worker within 30 s; its name stays cordoned (reconnections refused with close 1013) until undrain",
    request: { path: `/admin/workers/${WORKER_EXAMPLE.id}/drain`, body: { timeout_secs: 30, reason: 'kernel upgrade' } },
    response: { status: 202, body: WORKER_EXAMPLE },
  },
  invalid: {
    summary: 'An unknown field',
    request: { path: `/admin/workers/${WORKER_EXAMPLE.id}/drain`, body: { timeout: 30 } },
    response: { status: 422, body: body(Errors.validationFailed([{ field: 'timeout', message: 'property timeout should not exist' }])) },
  },
  unknown: { summary: 'An unknown worker id', request: { path: '/admin/workers/no-such-worker/drain', body: {} }, response: { status: 404, body: body(notFoundWorker) } },
};

/** The answers of the reload examples: the pool reload and configuration reload docs' own. */
const RELOADED = {
  reloaded: true,
  config_file: '/etc/switchboard/switchboard.yaml',
  changes: {
    routing: { aliases: { added: ['gpt-4o'], updated: [], removed: [] }, strategy: { from: 'smart', to: 'round_robin' } },
    providers: { added: ['gpu-west'], updated: ['gpu-east'], removed: ['old-pool'] },
    tenants: { added: ['team-c'], updated: ['team-a'], removed: [], overridden: [] },
  },
  restart_required: ['heartbeat_interval_secs'],
  warnings: [],
};
export const POOL_RELOAD_EXAMPLE = {
  path: '/v1/pools/gpu-east/reload',
  body: { models: ['llama-3.1-70b', 'llama-3.1-8b'], aliases: { fast: 'llama-3.1-8b' }, capabilities: { 'llama-3.1-70b': { vision: false, context_length: 32768 } } },
};
export const POOL_RELOAD_REFUSED = {
  path: '/v1/pools/gpu-east/reload',
  body: { aliases: { fast: 'llama-3.1-8b' }, capabilities: { 'llama-3.1-8b': { vision: 'yes' } } },
  problems: [
    'capabilities.llama-3.1-8b.vision must be true or false',
    'aliases.fast: target "llama-3.1-8b" is not a model of pool "gpu-east" (declare it in models, or connect a worker that serves it)',
  ],
};
/** A config file whose reload is refused, and the problems the gateway names for it. */
export const CONFIG_RELOAD_REFUSED = {
  file: 'bogus_key: 1\ntenants:\n  team-a:\n    rpm: -5\n',
  problems: ['tenants.team-a.rpm must be an integer >= 0 <= 9007199254740991, got "-5"', 'bogus_key (config file) is not a setting'],
};

export const CONTROL_PLANE_API = {
  listProviders: {
    operationId: 'listProviders',
    summary: 'Providers (pools)',
    description: 'Limits, `has_secret`, live worker count and queue depth; never secrets.',
    tags: [TAGS.providers],
    security: ADMIN_SECURITY,
    responses: { 200: jsonResponse('The providers', ref('ProviderList')), ...admin() },
  },
  createProvider: {
    operationId: 'createProvider',
    summary: 'Create a provider',
    tags: [TAGS.providers],
    security: ADMIN_SECURITY,
    requestBody: { required: true, content: json(ref('CreateProvider'), { typical: { summary: 'A pool with its own secret and limits', value: { name: 'gpu-a', secret: 'a-long-worker-secret', max_queue_len: 200, models: ['llama3:70b'] } } }) },
    responses: { 201: jsonResponse('Created', ref('Provider')), ...admin(['invalid_request', 'conflict', 'validation_failed']) },
  },
  updateProvider: {
    operationId: 'updateProvider',
    summary: 'Update a provider',
    description: '`enabled: false` refuses new workers and answers `503 provider_disabled`.',
    tags: [TAGS.providers],
    security: ADMIN_SECURITY,
    parameters: [providerName],
    requestBody: { required: true, content: json(ref('UpdateProvider'), { disable: { summary: 'Disable the provider', value: { enabled: false } } }) },
    responses: { 200: jsonResponse('The provider', ref('Provider')), ...admin(['invalid_request', 'not_found', 'validation_failed']) },
  },
  deleteProvider: {
    operationId: 'deleteProvider',
    summary: 'Delete a provider',
    description:
      'Queued and in-flight requests fail `503 provider_deleted`; its workers are closed. A provider from configuration returns at the next boot: without `force=true` that is `409 conflict`.',
    tags: [TAGS.providers],
    security: ADMIN_SECURITY,
    parameters: [providerName, { name: 'force', in: 'query', required: false, description: 'Delete a provider from configuration until the next boot.', schema: { type: 'string', enum: ['true', 'false'] } }],
    responses: { 200: jsonResponse('Deleted', ref('ProviderDeleted'), { deleted: 'gpu-a' }), ...admin(['invalid_request', 'not_found', 'conflict']) },
  },
  listWorkers: {
    operationId: 'listWorkers',
    summary: 'Connected workers',
    tags: [TAGS.providers],
    security: ADMIN_SECURITY,
    responses: { 200: jsonResponse('The workers', ref('WorkerList')), ...admin() },
  },
  getWorker: {
    operationId: 'getWorker',
    summary: 'One worker',
    description: 'The list fields plus `in_flight_request_ids` and `held_request_ids`.',
    tags: [TAGS.providers],
    security: ADMIN_SECURITY,
    parameters: [workerId],
    responses: { 200: jsonResponse('The worker', ref('WorkerDetail')), ...admin(['not_found'], { not_found: notFoundWorker }) },
  },
  drainWorker: {
    operationId: 'drainWorker',
    summary: "Drain a worker and cordon its name",
    description:
      'Every live connection with the worker\'s name drains (`graceful_shutdown`, no new work, closed when idle or at the deadline, ' +
      'what is left failing `drain_timeout`); reconnections with that name are refused with close `1013` until `POST /admin/workers/{id}/undrain`.',
    tags: [TAGS.providers],
    security: ADMIN_SECURITY,
    parameters: [workerId],
    requestBody: { required: false, content: json(ref('DrainWorker'), { typical: { summary: 'Drain within 30 s', value: DRAIN_WORKER_EXAMPLES.drain.request.body } }) },
    responses: {
      202: jsonResponse('Draining', ref('Worker'), WORKER_EXAMPLE),
      ...admin(['invalid_request', 'not_found', 'validation_failed'], { not_found: notFoundWorker, validation_failed: Errors.validationFailed([{ field: 'timeout_secs', message: 'timeout_secs must not be greater than 86400' }]) }),
    },
    xExamples: DRAIN_WORKER_EXAMPLES,
  },
  undrainWorker: {
    operationId: 'undrainWorker',
    summary: "Lift a worker name's cordon",
    description: 'The id may be a live worker\'s or that of a drained connection that has gone (`connected: false`).',
    tags: [TAGS.providers],
    security: ADMIN_SECURITY,
    parameters: [workerId],
    responses: {
      200: jsonResponse('Undrained', ref('WorkerUndrained'), { id: WORKER_EXAMPLE.id, provider: 'gpu-a', name: 'gpu-node-1', undrained: true, connected: false }),
      ...admin(['not_found'], { not_found: notFoundWorker }),
    },
  },
  refreshModels: {
    operationId: 'refreshWorkerModels',
    summary: "Ask a worker to refresh its models",
    description: 'Sends `models_refresh`; the worker answers with `models_update`.',
    tags: [TAGS.providers],
    security: ADMIN_SECURITY,
    parameters: [workerId],
    responses: { 202: jsonResponse('Asked', ref('Worker')), ...admin(['not_found'], { not_found: notFoundWorker }) },
  },
  cordons: {
    operationId: 'listCordons',
    summary: 'What is cordoned now',
    tags: [TAGS.providers],
    security: ADMIN_SECURITY,
    responses: {
      200: jsonResponse('Cordons', ref('Cordons'), {
        pools: [{ pool: 'gpu-b', since: '2026-11-22T20:50:00.000Z', reason: 'maintenance', deadline_ms: 60000 }],
        workers: [{ provider: 'gpu-a', name: 'gpu-node-1', since: '2026-11-22T20:40:00.000Z', reason: 'kernel upgrade', worker_ids: [WORKER_EXAMPLE.id] }],
      }),
      ...admin(),
    },
  },
  stats: {
    operationId: 'getStats',
    summary: 'Per-pool figures since start',
    tags: [TAGS.providers],
    security: ADMIN_SECURITY,
    responses: {
      200: jsonResponse('Stats', ref('Stats'), {
        since: '2026-05-01T08:00:00.000Z',
        pools: [
          {
            pool: 'local', draining: false, workers: 2, queue_depth: 0, in_flight: 1, served: 1200, cancelled: 4,
            rejected_by_code: { queue_full: 3 }, errors_by_code: { queue_full: 3, worker_error: 1 },
            queue_wait_ms: { avg: 35, p95: 210 }, tokens: { prompt: 91000, completion: 40200, total: 131200 }, requests_per_min: 42, error_rate: 0.024,
            latency_ms: { p50: 180, p90: 610, p95: 830, p99: 1900, samples: 41 }, history: HISTORY_EXAMPLE,
          },
        ],
        unrouted: { rejected_by_code: { model_not_found: 2 }, errors_by_code: { model_not_found: 2 } },
        overall: { requests_per_min: 44, error_rate: 0.023, latency_ms: { p50: 175, p90: 600, p95: 820, p99: 1850, samples: 43 }, history: HISTORY_EXAMPLE },
        recent_errors: [
          {
            at: '2026-05-01T09:59:41.003Z', pool: null, status: 404, code: 'model_not_found', message: "Model 'gpt-5' not found",
            correlation_id: 'req-42', model: 'gpt-5', tenant: 'default', worker_id: null,
          },
        ],
      }),
      ...admin(),
    },
  },
  listPools: {
    operationId: 'listPools',
    summary: 'Health of every pool',
    tags: [TAGS.pools],
    security: ADMIN_SECURITY,
    responses: { 200: jsonResponse('The pools', ref('PoolList'), { data: [poolHealthExample(false)] }), ...admin() },
  },
  poolHealth: {
    operationId: 'getPoolHealth',
    summary: "One pool's health",
    tags: [TAGS.pools],
    security: ADMIN_SECURITY,
    parameters: [poolId],
    responses: { 200: jsonResponse('Health', ref('PoolHealth'), poolHealthExample(false)), ...admin(['not_found'], { not_found: notFoundPool }) },
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
    requestBody: { required: false, content: json(ref('DrainPool'), { typical: { summary: 'Drain within 60 s', value: DRAIN_POOL_EXAMPLES.drain.request.body } }) },
    responses: {
      202: jsonResponse('Draining: the health, cordoned', ref('PoolHealth'), poolHealthExample(true)),
      ...admin(['invalid_request', 'not_found', 'validation_failed'], { not_found: notFoundPool }),
    },
    xExamples: DRAIN_POOL_EXAMPLES,
  },
  undrainPool: {
    operationId: 'undrainPool',
    summary: "Lift a pool's cordon",
    tags: [TAGS.pools],
    security: ADMIN_SECURITY,
    parameters: [poolId],
    responses: { 200: jsonResponse('The health', ref('PoolHealth'), poolHealthExample(false)), ...admin(['not_found'], { not_found: notFoundPool }) },
  },
  capabilities: {
    operationId: 'getCapabilities',
    summary: 'What each pool can do right now',
    description: 'Engines, models and their context, slots, endpoints, queue, limits and features; cached for at most 5 s. `api_version` equals this document\'s `info.version`.',
    tags: [TAGS.client],
    security: CLIENT_SECURITY,
    parameters: CLIENT_HEADERS,
    responses: { 200: jsonResponse('The capabilities', ref('Capabilities'), CAPABILITIES_EXAMPLE), ...errorResponses('openai', [...CLIENT_AUTH_ERRORS, 'server_shutdown']) },
    xExamples: {
      discovery: { summary: 'One pool with one llama-server worker', request: { path: '/v1/capabilities' }, response: { status: 200, body: CAPABILITIES_EXAMPLE } },
      shutting_down: {
        summary: 'While the gateway shuts down',
        request: { path: '/v1/capabilities' },
        response: {
          status: 503,
          headers: { 'retry-after': '1', 'x-backoff-ms': '1000' },
          body: { error: { message: 'The gateway is shutting down', type: 'server_error', code: 'server_shutdown', param: null, kind: 'POOL_UNAVAILABLE', retriable: true, retry_after_ms: 1000 } },
        },
      },
    },
  },
  reload: {
    operationId: 'reloadConfiguration',
    summary: 'Reload the configuration file',
    description:
      'Re-reads `CONFIG_FILE` (like SIGHUP) and applies its providers, routing and tenants all or nothing. Settings that need a restart are listed in ' +
      '`restart_required` and not applied. When the file has problems nothing changes: `400` lists every one in `error.problems`.',
    tags: [TAGS.config],
    security: ADMIN_SECURITY,
    responses: {
      200: jsonResponse('Reloaded', ref('ReloadResult'), RELOADED),
      ...admin(['invalid_request'], { invalid_request: rejectedWithProblems('Configuration', CONFIG_RELOAD_REFUSED.problems) }),
    },
    xExamples: {
      reloaded: { summary: 'A new global alias, strategy, provider and tenant; a restart-only setting changed', request: { path: '/admin/reload' }, response: { status: 200, body: RELOADED } },
      refused: {
        summary: 'The file has problems: nothing changes',
        request: { path: '/admin/reload' },
        response: { status: 400, body: body(rejectedWithProblems('Configuration', CONFIG_RELOAD_REFUSED.problems)) },
      },
    },
  },
  reloadPool: {
    operationId: 'reloadPool',
    summary: "Replace a pool's models, aliases or capabilities",
    description:
      "Validates the whole body, then swaps the three in at once and stores them; answers the pool's new declarations. Any problem answers `400` " +
      'with every one in `error.problems`, and nothing changes. An unknown pool is `404` before the body is judged.',
    tags: [TAGS.pools],
    security: ADMIN_SECURITY,
    parameters: [poolId],
    requestBody: {
      required: false,
      content: json(ref('PoolReload'), { typical: { summary: 'New models, an alias and a capability declaration', value: POOL_RELOAD_EXAMPLE.body } }),
    },
    responses: {
      200: jsonResponse("The pool's new declarations", ref('PoolDeclarations'), { id: 'gpu-east', ...POOL_RELOAD_EXAMPLE.body }),
      ...admin(['invalid_request', 'not_found', 'internal_error'], {
        invalid_request: rejectedWithProblems("Reload of pool 'gpu-east'", POOL_RELOAD_REFUSED.problems),
        not_found: notFoundPool,
        internal_error: new GatewayError('internal_error', "Pool 'gpu-east' could not be stored; its previous models, aliases and capabilities stay"),
      }),
    },
    xExamples: {
      reloaded: {
        summary: 'New models, an alias and a capability declaration, all at once',
        request: POOL_RELOAD_EXAMPLE,
        response: { status: 200, body: { id: 'gpu-east', ...POOL_RELOAD_EXAMPLE.body } },
      },
      refused: {
        summary: 'Problems: nothing changes',
        request: { path: POOL_RELOAD_REFUSED.path, body: POOL_RELOAD_REFUSED.body },
        response: { status: 400, body: body(rejectedWithProblems("Reload of pool 'gpu-east'", POOL_RELOAD_REFUSED.problems)) },
      },
      unknown: { summary: 'An unknown pool (checked before the body)', request: { path: '/v1/pools/gpu-z/reload', body: {} }, response: { status: 404, body: body(notFoundPool) } },
    },
  },
} satisfies Record<string, OperationDoc>;
