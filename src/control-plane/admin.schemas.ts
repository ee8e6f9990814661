import type { SchemaObject } from '@nestjs/swagger';
import { ISO_TIME, NULLABLE_ISO_TIME, ref } from '../common/doc-common';
import { CAPABILITY_FIELDS, CAPABILITY_TYPES } from '../protocol';
import { ADMIN_LIMITS, LimitKind, ProviderLimit } from '../providers/provider-limits';

/** OpenAPI of the admin providers, workers, cordons and stats routes (admin.controller.ts). */

/** One model's capabilities: the fields and their types as the protocol declares them (one table). */
const capabilities: SchemaObject = {
  type: 'object',
  properties: Object.fromEntries(CAPABILITY_FIELDS.map((f) => [f, { ...CAPABILITY_TYPES[f] }])),
  additionalProperties: false,
};

/** What the request and answer schemas say of a limit beyond its type and bounds, by API name. */
const LIMIT_DOCS: Record<string, string> = {
  enabled: '`false` refuses new workers and answers `503 provider_disabled`.',
  first_byte_timeout_secs:
    'Its own first-byte watchdog timeout (a worker that has not answered this long after taking a request is cancelled and the request moves on); `null` clears it: `routing.first_byte_timeout_secs` applies.',
  translation:
    'Whether `/v1/messages` and `/v1/responses` requests may reach its workers translated to chat completions (when no worker serves them natively); `null` clears it: `routing.translation` applies.',
  priority: 'Routing priority of its workers (lower is preferred); `null` clears it.',
};
const LIMIT_ANSWER_DOCS: Record<string, string> = {
  first_byte_timeout_secs: 'Its own first-byte timeout; null = `routing.first_byte_timeout_secs`.',
  translation: 'Its own translation setting; null = `routing.translation`.',
};

const LIMIT_TYPES: Record<LimitKind, string> = { count: 'integer', ms: 'number', number: 'number', boolean: 'boolean', enum: 'string' };

/** A limit's schema (providers/provider-limits.ts): bounds only where a body is checked against them. */
function limitSchema(f: ProviderLimit, bounds: boolean, doc: string | undefined): SchemaObject {
  return {
    type: LIMIT_TYPES[f.kind] as SchemaObject['type'],
    ...(f.values && { enum: [...f.values] }),
    ...(bounds && f.min !== undefined && { minimum: f.min }),
    ...(bounds && f.max !== undefined && { maximum: f.max }),
    ...(f.nullable && { nullable: true }),
    ...(doc !== undefined && { description: doc }),
  };
}

const limitFields = (bounds: boolean, docs: Record<string, string>): Record<string, SchemaObject> =>
  Object.fromEntries(ADMIN_LIMITS.map((f) => [f.api, limitSchema(f, bounds, docs[f.api])]));

const providerFields: Record<string, SchemaObject> = {
  secret: { type: 'string', minLength: 8, writeOnly: true, description: 'The secret its workers present; only a hash is stored.' },
  ...limitFields(true, LIMIT_DOCS),
  models: {
    type: 'array',
    maxItems: 10000,
    items: { type: 'string' },
    description:
      "Exact names and `*` globs: the models this provider's workers may serve (its allow-list; a model a provider lists belongs to the providers that list it). Exact names are declared even while no worker serves them. Empty = any model no provider lists.",
  },
  capabilities: { type: 'object', additionalProperties: ref('ModelCapabilities'), description: 'Per model; overrides what the workers declare.' },
};

export const WORKER_EXAMPLE = {
  id: 'w-7c9e6679-7425-40de-944b-e07fc1f90ae7',
  name: 'gpu-node-1',
  provider: 'gpu-a',
  replica: 'gateway-1',
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

const byCode: SchemaObject = { type: 'object', additionalProperties: { type: 'integer' } };
export const names: SchemaObject = { type: 'array', items: { type: 'string' } };
const rates: Record<string, SchemaObject> = { requests_per_min: { type: 'integer' }, error_rate: { type: 'number', minimum: 0, maximum: 1 } };
const ratesFigures = ['requests_per_min', 'error_rate', 'latency_ms', 'history'];

export const HISTORY_EXAMPLE = {
  bucket_secs: 10,
  start: '2026-05-01T09:55:10.000Z',
  requests: [7, 6, 8],
  errors: [0, 1, 0],
  latency_p50_ms: [170, 190, null],
  latency_p95_ms: [640, 900, null],
};

export const ADMIN_SCHEMAS: Record<string, SchemaObject> = {
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
    required: [
      'name',
      'source',
      'has_secret',
      // `translation` came later and was left optional in the document; it is always answered.
      ...ADMIN_LIMITS.filter((f) => f.key !== 'translation').map((f) => f.api),
      'models',
      'capabilities',
      'aliases',
      'workers_connected',
      'queue_depth',
    ],
    properties: {
      name: { type: 'string' },
      source: { type: 'string', enum: ['config', 'admin'], description: '`config` providers are rewritten at every boot.' },
      has_secret: { type: 'boolean' },
      ...limitFields(false, LIMIT_ANSWER_DOCS),
      models: { type: 'array', items: { type: 'string' } },
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
    required: [
      'id',
      'name',
      'provider',
      'replica',
      'models',
      'capabilities',
      'endpoints',
      'runner',
      'priority',
      'max_concurrent',
      'in_flight',
      'held_slots',
      'load',
      'draining',
      'cordoned',
      'cordon',
      'latency_ms',
      'consecutive_failures',
      'ejected',
      'ejected_until',
      'connected_at',
      'last_seen_at',
    ],
    properties: {
      id: { type: 'string' },
      name: { type: 'string' },
      provider: { type: 'string' },
      replica: {
        type: 'string',
        description:
          'The gateway replica whose listener holds its connection (`CLUSTER_REPLICA_ID`; one gateway: its `INSTANCE_ID`). In cluster mode every replica lists every worker of the cluster; `in_flight` counts the requests this replica sent it.',
      },
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
      cache_stats: {
        type: 'object',
        nullable: true,
        description: "The backend's cache state from the worker's latest pong (negotiated `cache_stats`); null when it reports none.",
        properties: { kv_cache_usage_ratio: { type: 'number', minimum: 0, maximum: 1 }, prefix_cache_hit_ratio: { type: 'number', minimum: 0, maximum: 1 } },
      },
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
      timeout_secs: {
        type: 'number',
        minimum: 0.001,
        maximum: 86400,
        description: 'Seconds to finish in-flight work (default `SHUTDOWN_DRAIN_TIMEOUT_SECS`).',
      },
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
        items: {
          type: 'object',
          required: ['pool', 'since', 'reason', 'deadline_ms'],
          properties: { pool: { type: 'string' }, since: ISO_TIME, reason: { type: 'string' }, deadline_ms: { type: 'integer' } },
        },
      },
      workers: {
        type: 'array',
        items: {
          type: 'object',
          required: ['provider', 'name', 'since', 'reason', 'worker_ids'],
          properties: {
            provider: { type: 'string' },
            name: { type: 'string' },
            since: ISO_TIME,
            reason: { type: 'string' },
            worker_ids: { type: 'array', items: { type: 'string' } },
          },
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
          required: [
            'pool',
            'draining',
            'workers',
            'queue_depth',
            'in_flight',
            'served',
            'cancelled',
            'rejected_by_code',
            'errors_by_code',
            'queue_wait_ms',
            'tokens',
            ...ratesFigures,
          ],
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
            tokens: {
              type: 'object',
              required: ['prompt', 'completion', 'total'],
              properties: { prompt: { type: 'integer' }, completion: { type: 'integer' }, total: { type: 'integer' } },
            },
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
      watchdogs: {
        type: 'object',
        description:
          'Requests the watchdogs caught since the gateway started (docs/routing.md#watchdogs): no first byte in time (moved to another worker), stream stalled (ended).',
        required: ['first_byte', 'stream_idle'],
        properties: { first_byte: { type: 'integer' }, stream_idle: { type: 'integer' } },
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
};
