import type { SchemaObject } from '@nestjs/swagger';
import { Errors } from '../common/gateway-error';
import type { OperationDoc } from '../common/api-doc';
import { ADMIN_SECURITY, jsonResponse, NULLABLE_ISO_TIME, ref, TAGS } from '../common/doc-common';
import { adminErrors } from '../common/doc-errors';
import { tenantId } from '../tenancy/tenants.schemas';

/** OpenAPI of `/admin/usage` (usage.controller.ts). */

export const USAGE_SCHEMAS: Record<string, SchemaObject> = {
  Usage: {
    type: 'object',
    required: ['object', 'group_by', 'filters', 'data', 'concurrency'],
    properties: {
      object: { type: 'string', enum: ['usage'] },
      group_by: { type: 'string', enum: ['tenant', 'key', 'model', 'pool', 'day'], nullable: true },
      filters: {
        type: 'object',
        required: ['tenant', 'key', 'since', 'until'],
        properties: { tenant: { type: 'string', nullable: true }, key: { type: 'string', nullable: true }, since: NULLABLE_ISO_TIME, until: NULLABLE_ISO_TIME },
      },
      data: {
        type: 'array',
        description: 'One row of totals, or one per group; the group value is under the `group_by` name (null for rows without one, last).',
        items: {
          type: 'object',
          required: ['requests', 'errors', 'prompt_tokens', 'completion_tokens', 'total_tokens', 'worker_seconds', 'gpu_seconds', 'cost'],
          properties: {
            tenant: { type: 'string', nullable: true },
            key: { type: 'string', nullable: true },
            model: { type: 'string', nullable: true },
            pool: { type: 'string', nullable: true, description: 'The pool (provider) that admitted the requests.' },
            day: { type: 'string', nullable: true, pattern: '^\\d{4}-\\d{2}-\\d{2}$' },
            requests: { type: 'integer' },
            errors: { type: 'integer', description: 'Requests that ended with a status >= 400.' },
            prompt_tokens: { type: 'integer' },
            completion_tokens: { type: 'integer' },
            total_tokens: { type: 'integer' },
            worker_seconds: { type: 'number', description: 'Seconds the requests held a worker slot (placement to completion on the worker).' },
            gpu_seconds: {
              type: 'number',
              description: "GPU seconds: each request's slot time as a share of its worker, `worker_ms / max_concurrent × gpus_per_worker`.",
            },
            cost: { type: 'number', nullable: true, description: "`gpu_seconds` at the pools' `cost_per_gpu_hour`; null when no pool involved sets a price." },
          },
        },
      },
      concurrency: {
        type: 'array',
        description:
          'Live: every key and tenant with `max_concurrent` (of the `tenant` / `key` filter, when given), its requests on workers now and those waiting for room ([routing](routing.md#concurrency-caps)).',
        items: {
          type: 'object',
          required: ['scope', 'id', 'tenant', 'limit', 'in_flight', 'waiting'],
          properties: {
            scope: { type: 'string', enum: ['key', 'tenant'] },
            id: { type: 'string', description: 'The key id or the tenant id.' },
            tenant: { type: 'string' },
            limit: { type: 'integer', minimum: 1 },
            in_flight: { type: 'integer' },
            waiting: { type: 'integer' },
          },
        },
      },
    },
  },
};

const timeParam = (name: string, meaning: string) => ({
  name,
  in: 'query' as const,
  required: false,
  description: `${meaning}: ISO-8601 date (midnight UTC) or date-time, or epoch milliseconds.`,
  schema: { type: 'string' },
  example: name === 'since' ? '2025-01-01' : '2025-02-01',
});

export const USAGE_API = {
  usage: {
    operationId: 'getUsage',
    summary: 'Usage totals for chargeback',
    description: 'Totals of the usage records of finished requests; records appear after up to `USAGE_FLUSH_INTERVAL_SECS`.',
    tags: [TAGS.usage],
    security: ADMIN_SECURITY,
    parameters: [
      { name: 'tenant', in: 'query', required: false, description: "Only this tenant's requests.", schema: tenantId },
      { name: 'key', in: 'query', required: false, description: 'Only requests made with this API key id.', schema: { type: 'string' } },
      timeParam('since', 'Requests received at or after (inclusive)'),
      timeParam('until', 'Requests received before (exclusive)'),
      {
        name: 'group_by',
        in: 'query',
        required: false,
        description: 'Without it: one row of totals.',
        schema: { type: 'string', enum: ['tenant', 'key', 'model', 'pool', 'day'] },
      },
    ],
    responses: {
      200: jsonResponse('Totals', ref('Usage'), {
        object: 'usage',
        group_by: 'tenant',
        filters: { tenant: null, key: null, since: '2025-01-01T00:00:00.000Z', until: '2025-02-01T00:00:00.000Z' },
        data: [
          {
            tenant: 'team-a',
            requests: 1520,
            errors: 12,
            prompt_tokens: 803211,
            completion_tokens: 120044,
            total_tokens: 923255,
            worker_seconds: 3040.5,
            gpu_seconds: 760.125,
            cost: 0.528,
          },
          {
            tenant: 'team-b',
            requests: 87,
            errors: 0,
            prompt_tokens: 10233,
            completion_tokens: 4410,
            total_tokens: 14643,
            worker_seconds: 120,
            gpu_seconds: 30,
            cost: 0.020833,
          },
        ],
        concurrency: [{ scope: 'key', id: 'key_Qm3vX9pL2wR8tY4u', tenant: 'team-a', limit: 4, in_flight: 4, waiting: 2 }],
      }),
      ...adminErrors(['invalid_request'], {
        invalid_request: Errors.invalidRequest("Query parameter 'group_by' must be one of tenant, key, model, pool, day, got 'week'", 'group_by'),
      }),
    },
  },
} satisfies Record<string, OperationDoc>;
