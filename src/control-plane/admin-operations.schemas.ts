import { Errors, GatewayError } from '../common/gateway-error';
import { errorBody } from '../common/error-dialect';
import type { OperationDoc, XExample } from '../common/api-doc';
import { ADMIN_SECURITY, json, jsonResponse, pathParam, ref, TAGS } from '../common/doc-common';
import { adminErrors } from '../common/doc-errors';
import { WORKER_EXAMPLE, HISTORY_EXAMPLE } from './admin.schemas';

const workerId = pathParam('id', "The worker's connection id (`GET /admin/workers`).", WORKER_EXAMPLE.id);
const providerName = pathParam('name', 'The provider name.', 'gpu-a');
const notFoundWorker = Errors.notFound('Worker', 'no-such-worker');
/** The body the gateway writes for an admin error. */
const body = (e: GatewayError) => errorBody('openai', e);

const DRAIN_WORKER_EXAMPLES: Record<string, XExample> = {
  drain: {
    summary: 'Drain a worker within 30 s; its name stays cordoned (reconnections refused with close 1013) until undrain',
    request: { path: `/admin/workers/${WORKER_EXAMPLE.id}/drain`, body: { timeout_secs: 30, reason: 'kernel upgrade' } },
    response: { status: 202, body: WORKER_EXAMPLE },
  },
  invalid: {
    summary: 'An unknown field',
    request: { path: `/admin/workers/${WORKER_EXAMPLE.id}/drain`, body: { timeout: 30 } },
    response: { status: 422, body: body(Errors.validationFailed([{ field: 'timeout', message: 'property timeout should not exist' }])) },
  },
  unknown: {
    summary: 'An unknown worker id',
    request: { path: '/admin/workers/no-such-worker/drain', body: {} },
    response: { status: 404, body: body(notFoundWorker) },
  },
};

export const ADMIN_API = {
  listProviders: {
    operationId: 'listProviders',
    summary: 'Providers (pools)',
    description: 'Limits, `has_secret`, live worker count and queue depth; never secrets.',
    tags: [TAGS.providers],
    security: ADMIN_SECURITY,
    responses: { 200: jsonResponse('The providers', ref('ProviderList')), ...adminErrors() },
  },
  createProvider: {
    operationId: 'createProvider',
    summary: 'Create a provider',
    tags: [TAGS.providers],
    security: ADMIN_SECURITY,
    requestBody: {
      required: true,
      content: json(ref('CreateProvider'), {
        typical: {
          summary: 'A pool with its own secret and limits',
          value: { name: 'gpu-a', secret: 'a-long-worker-secret', max_queue_len: 200, models: ['llama3:70b'] },
        },
      }),
    },
    responses: { 201: jsonResponse('Created', ref('Provider')), ...adminErrors(['invalid_request', 'conflict', 'validation_failed']) },
  },
  updateProvider: {
    operationId: 'updateProvider',
    summary: 'Update a provider',
    description: '`enabled: false` refuses new workers and answers `503 provider_disabled`.',
    tags: [TAGS.providers],
    security: ADMIN_SECURITY,
    parameters: [providerName],
    requestBody: { required: true, content: json(ref('UpdateProvider'), { disable: { summary: 'Disable the provider', value: { enabled: false } } }) },
    responses: { 200: jsonResponse('The provider', ref('Provider')), ...adminErrors(['invalid_request', 'not_found', 'validation_failed']) },
  },
  deleteProvider: {
    operationId: 'deleteProvider',
    summary: 'Delete a provider',
    description:
      'Queued and in-flight requests fail `503 provider_deleted`; its workers are closed. A provider from configuration returns at the next boot: without `force=true` that is `409 conflict`.',
    tags: [TAGS.providers],
    security: ADMIN_SECURITY,
    parameters: [
      providerName,
      {
        name: 'force',
        in: 'query',
        required: false,
        description: 'Delete a provider from configuration until the next boot.',
        schema: { type: 'string', enum: ['true', 'false'] },
      },
    ],
    responses: { 200: jsonResponse('Deleted', ref('ProviderDeleted'), { deleted: 'gpu-a' }), ...adminErrors(['invalid_request', 'not_found', 'conflict']) },
  },
  listWorkers: {
    operationId: 'listWorkers',
    summary: 'Connected workers',
    tags: [TAGS.providers],
    security: ADMIN_SECURITY,
    responses: { 200: jsonResponse('The workers', ref('WorkerList')), ...adminErrors() },
  },
  getWorker: {
    operationId: 'getWorker',
    summary: 'One worker',
    description: 'The list fields plus `in_flight_request_ids` and `held_request_ids`.',
    tags: [TAGS.providers],
    security: ADMIN_SECURITY,
    parameters: [workerId],
    responses: { 200: jsonResponse('The worker', ref('WorkerDetail')), ...adminErrors(['not_found'], { not_found: notFoundWorker }) },
  },
  drainWorker: {
    operationId: 'drainWorker',
    summary: 'Drain a worker and cordon its name',
    description:
      "Every live connection with the worker's name drains (`graceful_shutdown`, no new work, closed when idle or at the deadline, " +
      'what is left failing `drain_timeout`); reconnections with that name are refused with close `1013` until `POST /admin/workers/{id}/undrain`.',
    tags: [TAGS.providers],
    security: ADMIN_SECURITY,
    parameters: [workerId],
    requestBody: {
      required: false,
      content: json(ref('DrainWorker'), { typical: { summary: 'Drain within 30 s', value: DRAIN_WORKER_EXAMPLES.drain.request.body } }),
    },
    responses: {
      202: jsonResponse('Draining', ref('Worker'), WORKER_EXAMPLE),
      ...adminErrors(['invalid_request', 'not_found', 'validation_failed'], {
        not_found: notFoundWorker,
        validation_failed: Errors.validationFailed([{ field: 'timeout_secs', message: 'timeout_secs must not be greater than 86400' }]),
      }),
    },
    xExamples: DRAIN_WORKER_EXAMPLES,
  },
  undrainWorker: {
    operationId: 'undrainWorker',
    summary: "Lift a worker name's cordon",
    description: "The id may be a live worker's or that of a drained connection that has gone (`connected: false`).",
    tags: [TAGS.providers],
    security: ADMIN_SECURITY,
    parameters: [workerId],
    responses: {
      200: jsonResponse('Undrained', ref('WorkerUndrained'), {
        id: WORKER_EXAMPLE.id,
        provider: 'gpu-a',
        name: 'gpu-node-1',
        undrained: true,
        connected: false,
      }),
      ...adminErrors(['not_found'], { not_found: notFoundWorker }),
    },
  },
  refreshModels: {
    operationId: 'refreshWorkerModels',
    summary: 'Ask a worker to refresh its models',
    description:
      'Sends `models_refresh`; the worker answers with `models_update`. In cluster mode only the replica the worker is connected to ' +
      "can send it: another answers `409 conflict` naming that replica (the worker's `replica`).",
    tags: [TAGS.providers],
    security: ADMIN_SECURITY,
    parameters: [workerId],
    responses: {
      202: jsonResponse('Asked', ref('Worker')),
      ...adminErrors(['not_found', 'conflict'], {
        not_found: notFoundWorker,
        conflict: Errors.conflict(`Worker '${WORKER_EXAMPLE.id}' is connected to gateway replica 'gw-2': send the request there`),
      }),
    },
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
      ...adminErrors(),
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
            pool: 'local',
            draining: false,
            workers: 2,
            queue_depth: 0,
            in_flight: 1,
            served: 1200,
            cancelled: 4,
            rejected_by_code: { queue_full: 3 },
            errors_by_code: { queue_full: 3, worker_error: 1 },
            queue_wait_ms: { avg: 35, p95: 210 },
            tokens: { prompt: 91000, completion: 40200, total: 131200 },
            requests_per_min: 42,
            error_rate: 0.024,
            latency_ms: { p50: 180, p90: 610, p95: 830, p99: 1900, samples: 41 },
            history: HISTORY_EXAMPLE,
          },
        ],
        unrouted: { rejected_by_code: { model_not_found: 2 }, errors_by_code: { model_not_found: 2 } },
        overall: { requests_per_min: 44, error_rate: 0.023, latency_ms: { p50: 175, p90: 600, p95: 820, p99: 1850, samples: 43 }, history: HISTORY_EXAMPLE },
        recent_errors: [
          {
            at: '2026-05-01T09:59:41.003Z',
            pool: null,
            status: 404,
            code: 'model_not_found',
            message: "Model 'gpt-5' not found",
            correlation_id: 'req-42',
            model: 'gpt-5',
            tenant: 'default',
            worker_id: null,
          },
        ],
      }),
      ...adminErrors(),
    },
  },
} satisfies Record<string, OperationDoc>;
