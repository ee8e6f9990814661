import { Errors, GatewayErrorCode } from '../common/gateway-error';
import type { OperationDoc } from '../common/api-doc';
import { ADMIN_SECURITY, json, jsonResponse, pathParam, ref, TAGS } from '../common/doc-common';
import { ADMIN_AUTH_CODES, errorResponses } from '../common/doc-errors';
import { GOVERNED_CODES, TOKEN, LOAD_STARTED, LOAD_DONE, UNLOADED, FLUSHED, body, insufficient, running, LOAD_EXAMPLES, AUDIT_ROW } from './lifecycle.schemas';

const governed = (codes: GatewayErrorCode[], overrides?: Parameters<typeof errorResponses>[2]) =>
  errorResponses('openai', [...GOVERNED_CODES, ...codes], overrides);
const TARGET_CODES: GatewayErrorCode[] = ['not_found', 'model_not_found', 'conflict', 'lifecycle_unsupported', 'pool_unready'];

export const LIFECYCLE_API = {
  load: {
    operationId: 'loadModel',
    summary: 'Load a model on workers (governed)',
    description:
      'Needs the admin token and a `verifiedOpToken` for `model-load` of this model. The workers (`workerId`, or `replicas` of `pool` by free slots and free GPU memory) get `model_load`; ' +
      '`evictModel` is drained and unloaded first. Answers 202 at once; poll `GET /v1/models/load/{taskId}`. Routing sends the model requests once the worker reports it (`models_update`).',
    tags: [TAGS.lifecycle],
    security: ADMIN_SECURITY,
    requestBody: {
      required: true,
      content: json(ref('LoadModelRequest'), { typical: { summary: 'On one worker of a pool', value: LOAD_EXAMPLES.typical.request.body } }),
    },
    responses: {
      202: jsonResponse('Loading', ref('LoadTask'), LOAD_STARTED),
      ...governed(TARGET_CODES, { conflict: running, op_token_insufficient_signers: insufficient }),
    },
    xExamples: LOAD_EXAMPLES,
  },
  loadTask: {
    operationId: 'getLoadTask',
    summary: 'Where a model load stands',
    description: 'Kept at least 24 h (`lifecycle.task_retention_hours`), across restarts.',
    tags: [TAGS.lifecycle],
    security: ADMIN_SECURITY,
    parameters: [pathParam('taskId', 'The `taskId` the load answered.', LOAD_STARTED.taskId)],
    responses: {
      200: jsonResponse('The task', ref('LoadTask'), LOAD_DONE),
      ...errorResponses('openai', [...ADMIN_AUTH_CODES, 'lifecycle_disabled', 'not_found'], { not_found: Errors.notFound('Load task', 'load-missing') }),
    },
    xExamples: {
      completed: { summary: 'A finished load', request: { path: `/v1/models/load/${LOAD_STARTED.taskId}` }, response: { status: 200, body: LOAD_DONE } },
      unknown: {
        summary: 'An unknown (or pruned) task',
        request: { path: '/v1/models/load/load-missing' },
        response: { status: 404, body: body(Errors.notFound('Load task', 'load-missing')) },
      },
    },
  },
  unload: {
    operationId: 'unloadModel',
    summary: 'Unload a model from workers (governed)',
    description:
      'On each worker serving it (the named one, or those of `pool`, or all): the model leaves routing, its in-flight requests finish (`lifecycle.unload_drain_timeout_secs`; past it the unload fails and nothing is cut), ' +
      'then `model_unload`. Answers when every worker has; `502 lifecycle_failed` (with `workers`) when one did not.',
    tags: [TAGS.lifecycle],
    security: ADMIN_SECURITY,
    requestBody: {
      required: true,
      content: json(ref('UnloadModelRequest'), {
        typical: { summary: 'From every worker of a pool', value: { modelId: 'llama3:8b', verifiedOpToken: TOKEN, pool: 'local' } },
      }),
    },
    responses: { 200: jsonResponse('Unloaded', ref('UnloadResult'), UNLOADED), ...governed([...TARGET_CODES, 'lifecycle_failed']) },
    xExamples: {
      typical: {
        summary: 'Unload from a pool',
        request: { path: '/v1/models/unload', body: { modelId: 'llama3:8b', verifiedOpToken: TOKEN, pool: 'local' } },
        response: { status: 200, body: UNLOADED },
      },
      unknown: {
        summary: 'No worker serves the model',
        request: { path: '/v1/models/unload', body: { modelId: 'gpt-5', verifiedOpToken: TOKEN } },
        response: { status: 404, body: body(Errors.modelNotFound('gpt-5')) },
      },
    },
  },
  flush: {
    operationId: 'flushCache',
    summary: 'Flush KV cache on workers (governed)',
    description:
      'Scope `all`, `model` (with `modelId`: the workers serving it), `tenant` (with `tenantId`) or `tag` (with `tag`); to the named worker, or every worker of `pool` (or of the gateway) that negotiated `model_lifecycle`. ' +
      'Answers the totals once every worker has; `502 lifecycle_failed` when one did not.',
    tags: [TAGS.lifecycle],
    security: ADMIN_SECURITY,
    requestBody: {
      required: true,
      content: json(ref('CacheFlushRequest'), {
        tenant: { summary: "A tenant's cache", value: { scope: 'tenant', tenantId: 'community-x', modelId: null, verifiedOpToken: TOKEN } },
      }),
    },
    responses: { 200: jsonResponse('Flushed', ref('CacheFlushResult'), FLUSHED), ...governed([...TARGET_CODES, 'lifecycle_failed']) },
    xExamples: {
      tenant: {
        summary: "Flush a tenant's cache everywhere",
        request: { path: '/v1/cache/flush', body: { scope: 'tenant', tenantId: 'community-x', verifiedOpToken: TOKEN } },
        response: { status: 200, body: FLUSHED },
      },
      missing: {
        summary: 'Scope model without modelId',
        request: { path: '/v1/cache/flush', body: { scope: 'model', verifiedOpToken: TOKEN } },
        response: { status: 422, body: body(Errors.validationFailed([{ field: 'modelId', message: "modelId is required with scope 'model'" }])) },
      },
    },
  },
  audit: {
    operationId: 'listAudit',
    summary: 'The audit trail of admin actions, newest first',
    description:
      'Every admin mutation (keys, tenants, providers, pools, workers, configuration reloads by request or SIGHUP) with its actor, role, source address, correlation id, target, outcome and a summary without secrets; ' +
      'every lifecycle request, accepted or refused, and the end of every accepted one. Filters combine.',
    tags: [TAGS.lifecycle],
    security: ADMIN_SECURITY,
    parameters: [
      {
        name: 'actor',
        in: 'query',
        required: false,
        description: "Only rows of this actor's subject (`admin-token`, `sighup`, an SSO `sub`).",
        schema: { type: 'string' },
      },
      {
        name: 'action',
        in: 'query',
        required: false,
        description: 'Only rows of this action (`keys.create`, `lifecycle.model-load`…).',
        schema: { type: 'string' },
      },
      { name: 'target', in: 'query', required: false, description: 'Only rows of this target id.', schema: { type: 'string' } },
      { name: 'operation', in: 'query', required: false, schema: { type: 'string', enum: ['model-load', 'model-unload', 'cache-flush'] } },
      { name: 'outcome', in: 'query', required: false, schema: { type: 'string', enum: ['accepted', 'refused', 'completed', 'failed'] } },
      { name: 'model', in: 'query', required: false, description: 'Only rows of this model id.', schema: { type: 'string' } },
      { name: 'task', in: 'query', required: false, description: 'Only rows of this task id.', schema: { type: 'string' } },
      {
        name: 'since',
        in: 'query',
        required: false,
        description: 'At or after: ISO-8601 date or date-time, or epoch ms.',
        schema: { type: 'string' },
        example: '2026-12-01',
      },
      {
        name: 'until',
        in: 'query',
        required: false,
        description: 'Before: ISO-8601 date or date-time, or epoch ms.',
        schema: { type: 'string' },
        example: '2026-12-06',
      },
      { name: 'before', in: 'query', required: false, description: 'Rows older than this id (paging).', schema: { type: 'integer', minimum: 1 } },
      {
        name: 'limit',
        in: 'query',
        required: false,
        description: 'At most this many rows (default 100).',
        schema: { type: 'integer', minimum: 1, maximum: 1000 },
      },
    ],
    responses: {
      200: jsonResponse('Audit rows', ref('AuditList'), { object: 'list', data: [AUDIT_ROW], next_before: null }),
      ...errorResponses('openai', [...ADMIN_AUTH_CODES, 'invalid_request'], {
        invalid_request: Errors.invalidRequest("Query parameter 'operation' must be one of model-load, model-unload, cache-flush, got 'load'", 'operation'),
      }),
    },
  },
} satisfies Record<string, OperationDoc>;
