import type { SchemaObject } from '@nestjs/swagger';
import type { OperationDoc } from '../common/api-doc';
import { ISO_TIME, jsonResponse, NO_SECURITY, ref, TAGS } from '../common/doc-common';

/** `/health`, `/health/live`, `/health/ready` and `/metrics`: no authentication. */

const indicators: SchemaObject = {
  type: 'object',
  additionalProperties: { type: 'object', required: ['status'], properties: { status: { type: 'string', enum: ['up', 'down'] } }, additionalProperties: true },
};

export const OBSERVABILITY_SCHEMAS: Record<string, SchemaObject> = {
  Live: { type: 'object', required: ['status'], properties: { status: { type: 'string', enum: ['ok'] } } },
  Readiness: {
    type: 'object',
    required: ['status'],
    description: '`@nestjs/terminus` result: checks `database` (SELECT 1, 1.5 s timeout) and `lifecycle` (shutdown not begun).',
    properties: { status: { type: 'string', enum: ['ok', 'error', 'shutting_down'] }, info: indicators, error: indicators, details: indicators },
  },
  HealthSummary: {
    type: 'object',
    required: ['status', 'version', 'uptime_secs', 'workers_connected', 'queue_depth', 'models_loaded', 'uptime', 'modelsLoaded', 'queueDepth', 'providers'],
    properties: {
      status: {
        type: 'string',
        enum: ['healthy', 'shutting_down', 'saturated'],
        description: "The seed's values. `saturated`: every enabled pool's queue is at its bound (a pool with `max_queue_len: 0` never is).",
      },
      version: { type: 'string' },
      uptime_secs: { type: 'integer' },
      workers_connected: { type: 'integer' },
      queue_depth: { type: 'integer' },
      models_loaded: { type: 'integer', description: 'Distinct models served by connected, non-draining workers.' },
      uptime: { type: 'integer', description: "The seed's name for `uptime_secs`." },
      modelsLoaded: { type: 'integer', description: "The seed's name for `models_loaded`." },
      queueDepth: { type: 'integer', description: "The seed's name for `queue_depth`." },
      providers: {
        type: 'array',
        items: {
          type: 'object',
          required: ['name', 'enabled', 'workers', 'queue_depth', 'max_queue_len'],
          properties: {
            name: { type: 'string' },
            enabled: { type: 'boolean' },
            workers: { type: 'integer' },
            queue_depth: { type: 'integer' },
            max_queue_len: { type: 'integer' },
          },
        },
      },
      redis: {
        type: 'object',
        description: 'Only while REDIS_URL is set; never changes `status` or readiness.',
        required: ['status'],
        properties: { status: { type: 'string', enum: ['ok', 'down'] }, url: { type: 'string', description: 'host:port only.' }, since: ISO_TIME },
      },
      cluster: {
        type: 'object',
        description: 'Only in cluster mode (`CLUSTER_REDIS_URL`); `degraded` never changes `status` or readiness: the replica keeps serving its own workers.',
        required: ['replica_id', 'members', 'degraded'],
        properties: {
          replica_id: { type: 'string' },
          members: { type: 'integer', minimum: 1, description: 'Live replicas this one sees, itself included (1 while degraded).' },
          degraded: { type: 'boolean', description: "`true` while the cluster's Redis is out of reach." },
        },
      },
    },
  },
};

export const OBSERVABILITY_API = {
  summary: {
    operationId: 'getHealthSummary',
    summary: 'Summary for operators',
    description: 'Counts only: no secrets, worker ids or addresses. 503 while shutting down or saturated, so load balancers probing it take the gateway out.',
    tags: [TAGS.health],
    security: NO_SECURITY,
    responses: {
      200: jsonResponse('The summary', ref('HealthSummary'), {
        status: 'healthy',
        version: '0.1.0',
        uptime_secs: 3605,
        workers_connected: 4,
        queue_depth: 2,
        models_loaded: 3,
        uptime: 3605,
        modelsLoaded: 3,
        queueDepth: 2,
        providers: [{ name: 'default', enabled: true, workers: 4, queue_depth: 2, max_queue_len: 100 }],
      }),
      503: jsonResponse("Shutting down, or every pool's queue is full", ref('HealthSummary'), {
        status: 'saturated',
        version: '0.1.0',
        uptime_secs: 3605,
        workers_connected: 4,
        queue_depth: 100,
        models_loaded: 3,
        uptime: 3605,
        modelsLoaded: 3,
        queueDepth: 100,
        providers: [{ name: 'default', enabled: true, workers: 4, queue_depth: 100, max_queue_len: 100 }],
      }),
    },
  },
  live: {
    operationId: 'getLiveness',
    summary: 'Liveness',
    description: '200 while the process serves HTTP, also during a graceful shutdown.',
    tags: [TAGS.health],
    security: NO_SECURITY,
    responses: { 200: jsonResponse('Alive', ref('Live'), { status: 'ok' }) },
  },
  ready: {
    operationId: 'getReadiness',
    summary: 'Readiness',
    description: '200 when the database answers and shutdown has not begun, else 503.',
    tags: [TAGS.health],
    security: NO_SECURITY,
    responses: {
      200: jsonResponse('Ready', ref('Readiness'), {
        status: 'ok',
        info: { database: { status: 'up' }, lifecycle: { status: 'up' } },
        error: {},
        details: { database: { status: 'up' }, lifecycle: { status: 'up' } },
      }),
      503: jsonResponse('Not ready', ref('Readiness'), {
        status: 'shutting_down',
        info: {},
        error: { lifecycle: { status: 'down', message: 'shutting down' } },
        details: { lifecycle: { status: 'down', message: 'shutting down' } },
      }),
    },
  },
  metrics: {
    operationId: 'getMetrics',
    summary: 'Prometheus metrics',
    description: 'Text exposition format 0.0.4: `switchboard_*` families and process metrics (see observability.md).',
    tags: [TAGS.health],
    security: NO_SECURITY,
    responses: {
      200: {
        description: 'The metrics',
        content: {
          'text/plain': {
            schema: { type: 'string' },
            examples: {
              metrics: {
                summary: 'An excerpt',
                value:
                  '# HELP switchboard_queue_depth Requests waiting in the provider queue for a free worker slot.\n# TYPE switchboard_queue_depth gauge\nswitchboard_queue_depth{provider="local"} 0\n',
              },
            },
          },
        },
      },
    },
  },
} satisfies Record<string, OperationDoc>;
