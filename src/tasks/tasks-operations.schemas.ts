import type { HeaderObject, SchemaObject } from '@nestjs/swagger';
import { Errors, GatewayError, GatewayErrorCode, statusOf } from '../common/gateway-error';
import { errorBody } from '../common/error-dialect';
import type { OperationDoc, ResponseDoc, XExample } from '../common/api-doc';
import { CLIENT_SECURITY, HEADERS, INFERENCE_HEADERS, json, jsonResponse, pathParam, ref, TAGS } from '../common/doc-common';
import { errorResponses, SAMPLE_ERRORS } from '../common/doc-errors';

const REQUEST = {
  task_id: 'review-42',
  session_id: 'agent-7',
  model: 'llama3:8b',
  messages: [{ role: 'user', content: 'Summarise the release notes.' }],
  max_tokens: 256,
  temperature: 0.2,
  output_mode: 'text',
  budget: { tokens: 20000, time_secs: 600 },
  tags: ['agent:reviewer'],
};
/** The same request without a chosen id (a refusal shown for one would hide behind 409). */
const { task_id: _id, ...UNNAMED } = REQUEST;
const URLS = { stream_url: '/v1/tasks/review-42/stream', status_url: '/v1/tasks/review-42' };
const ACCEPTED = { task_id: 'review-42', queue_position: 3, predicted_start_ms: 4200, ...URLS };

const STREAM =
  'id: 1\nevent: started\ndata: {"queue_position":3,"predicted_start_ms":4200}\n\n' +
  'id: 2\nevent: metrics\ndata: {"queue_depth":7,"tokens_out":0,"queue_position":3,"budget_remaining":{"tokens":19000,"time_secs":600}}\n\n' +
  ': keepalive\n\n' +
  'id: 3\nevent: started\ndata: {"queue_position":1,"predicted_start_ms":1400}\n\n' +
  'id: 4\nevent: started\ndata: {"queue_position":0,"predicted_start_ms":0}\n\n' +
  'id: 5\nevent: token\ndata: {"t":"The","i":0}\n\n' +
  'id: 6\nevent: token\ndata: {"t":" release","i":1}\n\n' +
  'id: 7\nevent: end\ndata: {"tokens_out":2,"decode_time_ms":840,"decode_ms":840}\n\n';
const RESUMED = STREAM.split('id: ')
  .filter((f) => /^[67]\n/.test(f))
  .map((f) => `id: ${f}`)
  .join('');
const CANCELLED =
  'id: 1\nevent: started\ndata: {"queue_position":0,"predicted_start_ms":0}\n\n' +
  'id: 2\nevent: token\ndata: {"t":"The","i":0}\n\n' +
  'id: 3\nevent: error\ndata: {"code":"cancelled","message":"The task was cancelled by its client","retriable":false}\n\n';
const FAILED =
  'id: 1\nevent: started\ndata: {"queue_position":0,"predicted_start_ms":0}\n\n' +
  'id: 2\nevent: token\ndata: {"t":"The","i":0}\n\n' +
  'id: 3\nevent: error\ndata: {"code":"worker_disconnected","message":"The worker disconnected during the response","retriable":true,"retry_after_ms":1000,"kind":"WORKER_RESET","pool_id":"gpu-a","engine":"vllm"}\n\n';

const status = (over: Record<string, unknown>) => ({
  task_id: 'review-42',
  status: 'running',
  model: 'llama3:8b',
  served_model: 'llama3:8b',
  pool_id: 'gpu-a',
  session_id: 'agent-7',
  queue_position: 0,
  predicted_start_ms: 0,
  created_at: '2026-11-22T20:50:00.000Z',
  started_at: '2026-11-22T20:50:04.200Z',
  ended_at: null,
  queue_wait_ms: 4200,
  decode_time_ms: 600,
  tokens_out: 1,
  last_event_id: 5,
  error: null,
  artifact_id: null,
  ...URLS,
  ...over,
});
const CANCELLED_STATUS = status({
  status: 'cancelled',
  ended_at: '2026-11-22T20:50:04.800Z',
  last_event_id: 6,
  error: { code: 'cancelled', message: 'The task was cancelled by its client', retriable: false },
  artifact_id: 'sha256:9f2c51e0d4a7b3c8e1f6a2d9c0b4e7f3a5d8c1b6e9f2a4c7d0b3e6f9a2c5d8e1',
});
const COMPLETED_STATUS = status({
  status: 'completed',
  ended_at: '2026-11-22T20:50:05.040Z',
  decode_time_ms: 840,
  tokens_out: 2,
  last_event_id: 7,
  artifact_id: 'sha256:4b1e7c0a9d3f6e2b8c5a1d7f0e4b9c3a6d2f8e1b5c9a0d4e7f3b6c2a8d1e5f9b',
});

/** Refusals as `POST /v1/tasks` writes them: each names the check that failed. */
const ADMISSION: Partial<Record<GatewayErrorCode, GatewayError>> = {
  invalid_params: Errors.invalidParams('"max_tokens" is required (a positive integer)', 'max_tokens').with({ fields: { check: 'params' } }),
  unknown_model: SAMPLE_ERRORS.unknown_model.with({ fields: { check: 'model' } }),
  model_not_allowed: SAMPLE_ERRORS.model_not_allowed.with({ fields: { check: 'model' } }),
  capability_mismatch: SAMPLE_ERRORS.capability_mismatch.with({ fields: { check: 'capabilities' } }),
  conflict: Errors.conflict("Task 'review-42' already exists").with({ fields: { check: 'task_id' } }),
  queue_full: SAMPLE_ERRORS.queue_full.with({ fields: { check: 'queue', pool_id: 'gpu-a' } }),
  rate_limit_exceeded: SAMPLE_ERRORS.rate_limit_exceeded.with({ fields: { check: 'rate_limit' } }),
  budget_exceeded: SAMPLE_ERRORS.budget_exceeded.with({ fields: { check: 'tenant_budget' } }),
  pool_unready: SAMPLE_ERRORS.pool_unready.with({ fields: { check: 'pool' } }),
  pool_unavailable: SAMPLE_ERRORS.pool_unavailable.with({ fields: { check: 'pool' } }),
  no_healthy_worker: SAMPLE_ERRORS.no_healthy_worker.with({ fields: { check: 'pool' } }),
  fallback_exhausted: SAMPLE_ERRORS.fallback_exhausted.with({ fields: { check: 'pool' } }),
  provider_disabled: SAMPLE_ERRORS.provider_disabled.with({ fields: { check: 'pool' } }),
};

const SUBMIT_ERRORS: GatewayErrorCode[] = [
  'invalid_request',
  'invalid_params',
  'capability_mismatch',
  'context_exceeded',
  'invalid_api_key',
  'tenant_mismatch',
  'model_not_allowed',
  'unknown_model',
  'conflict',
  'payload_too_large',
  'auth_rate_limited',
  'queue_full',
  'rate_limit_exceeded',
  'budget_exceeded',
  'session_budget_exceeded',
  'pool_unready',
  'pool_unavailable',
  'no_healthy_worker',
  'fallback_exhausted',
  'provider_disabled',
  'server_shutdown',
];
const READ_ERRORS: GatewayErrorCode[] = ['invalid_request', 'invalid_api_key', 'tenant_mismatch', 'auth_rate_limited', 'not_found'];
const NOT_FOUND = Errors.notFound('Task', 'review-43');
const TOO_MANY_READERS = Errors.conflict(
  "Task 'review-42' already has 16 open streams (tasks.max_readers): close one, or read its events later with Last-Event-ID",
);

const exchange = (summary: string, path: string, body: unknown, statusCode: number, answer: unknown, headers?: Record<string, string>): XExample => ({
  summary,
  request: { path, ...(headers ? { headers } : {}), ...(body === undefined ? {} : { body }) },
  response: { status: statusCode, body: answer },
});
const refused = (summary: string, body: unknown, error: GatewayError): XExample =>
  exchange(summary, '/v1/tasks', body, statusOf(error.code), errorBody('openai', error));

const TASK_ID = pathParam('id', 'The task id (`task_id`).', 'review-42');
const SSE_CONTENT = (examples: Record<string, { summary: string; value: string }>) => ({
  'text/event-stream': { schema: { type: 'string' } as SchemaObject, examples },
});
const ACCEPTED_HEADERS: Record<string, HeaderObject> = {
  'X-Correlation-Id': HEADERS.correlationId,
  Location: { description: 'The status URL.', schema: { type: 'string' } },
  'X-Budget-Remaining-Tokens': {
    description: "When a token budget applies: tokens the task's session has left (before this task).",
    schema: { type: 'integer', minimum: 0 },
  },
  'x-ratelimit-limit-requests': HEADERS.rateLimit,
};

const statusResponse = (description: string, example: unknown): ResponseDoc =>
  jsonResponse(description, ref('TaskStatus'), example, { 'X-Correlation-Id': HEADERS.correlationId });

export const TASKS_API: Record<'submit' | 'stream' | 'status' | 'cancel', OperationDoc> = {
  submit: {
    operationId: 'createTask',
    summary: 'Submit a task',
    description:
      'Admission checks run before the task may queue: the body, the model, the pin (`pool_id`), prompt + `max_tokens` against `ctx` and against the context of ' +
      "every worker that could serve it, the session's token and time budget, the tenant's rate limits and budget, the queue bound. A refusal says which check " +
      'failed (`check`). Accepted tasks run whether or not anyone reads their stream.',
    tags: [TAGS.tasks],
    security: CLIENT_SECURITY,
    parameters: INFERENCE_HEADERS.filter((p) => p.name !== 'x-switchboard-provider'),
    requestBody: { required: true, content: json(ref('TaskRequest'), { typical: { summary: 'A chat task in a session with a budget', value: REQUEST } }) },
    responses: {
      202: {
        description: 'Accepted: its place in line and where to read it.',
        headers: ACCEPTED_HEADERS,
        content: json(ref('TaskAccepted'), { typical: { summary: 'Queued third', value: ACCEPTED } }),
      },
      ...errorResponses('openai', SUBMIT_ERRORS, ADMISSION),
    },
    xExamples: {
      typical: exchange('A task that waits third in line', '/v1/tasks', REQUEST, 202, ACCEPTED),
      context: refused(
        'Prompt + max_tokens above the ctx bound',
        { ...UNNAMED, ctx: 128 },
        Errors.contextExceeded({ promptTokens: 7, maxTokens: 256, ctx: 128, model: 'llama3:8b' }),
      ),
      session_budget: refused('The session has spent its tokens', UNNAMED, SAMPLE_ERRORS.session_budget_exceeded),
      malformed: refused('A body without max_tokens names the field', { model: 'llama3:8b', prompt: 'Hello' }, ADMISSION.invalid_params!),
      unknown_model: refused(
        'No worker, declared model or recent worker knows the model (400, where the inference routes answer 404)',
        { ...UNNAMED, model: 'gpt-5' },
        ADMISSION.unknown_model!,
      ),
      duplicate: refused('A task id that exists', REQUEST, ADMISSION.conflict!),
      queue_full: refused("The pool's queue is full (Retry-After, X-Backoff-Ms)", UNNAMED, ADMISSION.queue_full!),
    },
  },
  stream: {
    operationId: 'streamTask',
    summary: "A task's events (SSE)",
    description:
      '`started` (at once, repeated while the task waits and its position or prediction moves), `token` per text delta, `metrics` (additive), then `end` — ' +
      'or `error`, after which nothing follows (`cancelled` when the client cancelled it). Every event has an `id:`; `Last-Event-ID` resumes after it. ' +
      'While the task waits a `: keepalive` comment comes every `tasks.keepalive_secs`. Every reader gets the same events (an unfinished task takes at most ' +
      '`tasks.max_readers` streams at once: 409 past it); a finished task is replayed.',
    tags: [TAGS.tasks],
    security: CLIENT_SECURITY,
    parameters: [
      TASK_ID,
      {
        name: 'Last-Event-ID',
        in: 'header',
        required: false,
        description: "Resume after this event id (400 for one that is not a number or beyond the task's last event).",
        schema: { type: 'integer', minimum: 0 },
      },
    ],
    responses: {
      200: {
        description: 'The event stream (`text/event-stream`).',
        headers: { 'X-Correlation-Id': HEADERS.correlationId },
        content: SSE_CONTENT({
          typical: { summary: 'Queued, started, two tokens, end', value: STREAM },
          resumed: { summary: 'Resumed with Last-Event-ID: 5', value: RESUMED },
          cancelled: { summary: 'Cancelled after the first token', value: CANCELLED },
          failed: { summary: 'The worker went away after the first token', value: FAILED },
        }),
      },
      ...errorResponses('openai', [...READ_ERRORS, 'invalid_params', 'conflict'], {
        not_found: NOT_FOUND,
        invalid_params: Errors.invalidParams('Last-Event-ID must be the id of an event of this task (a non-negative integer)', 'Last-Event-ID'),
        conflict: TOO_MANY_READERS,
      }),
    },
    xExamples: {
      typical: exchange('The whole stream of a task', '/v1/tasks/review-42/stream', undefined, 200, STREAM),
      too_many_readers: exchange(
        'An unfinished task with tasks.max_readers streams open',
        '/v1/tasks/review-42/stream',
        undefined,
        409,
        errorBody('openai', TOO_MANY_READERS),
      ),
      resumed: exchange('Resuming after event 5', '/v1/tasks/review-42/stream', undefined, 200, RESUMED, { 'Last-Event-ID': '5' }),
      unknown: exchange("An unknown task (or another tenant's)", '/v1/tasks/review-43/stream', undefined, 404, errorBody('openai', NOT_FOUND)),
    },
  },
  status: {
    operationId: 'getTask',
    summary: "A task's status",
    tags: [TAGS.tasks],
    security: CLIENT_SECURITY,
    parameters: [TASK_ID],
    responses: { 200: statusResponse('The task', status({})), ...errorResponses('openai', READ_ERRORS, { not_found: NOT_FOUND }) },
    xExamples: {
      running: exchange('A running task', '/v1/tasks/review-42', undefined, 200, status({})),
      completed: exchange('A completed task with its artifact', '/v1/tasks/review-42', undefined, 200, COMPLETED_STATUS),
      unknown: exchange('An unknown task', '/v1/tasks/review-43', undefined, 404, errorBody('openai', NOT_FOUND)),
    },
  },
  cancel: {
    operationId: 'cancelTask',
    summary: 'Cancel a task',
    description:
      'Race-free: once this answers, no stream of the task receives another `token`; its stream ends with `error {code: "cancelled"}`, a queued task leaves ' +
      "the queue, a running one's worker gets `cancel`. Idempotent: a finished task is left as it is and its status returned.",
    tags: [TAGS.tasks],
    security: CLIENT_SECURITY,
    parameters: [TASK_ID],
    responses: { 200: statusResponse('The task as it now is', CANCELLED_STATUS), ...errorResponses('openai', READ_ERRORS, { not_found: NOT_FOUND }) },
    xExamples: {
      running: exchange('Cancelling a running task', '/v1/tasks/review-42/cancel', undefined, 200, CANCELLED_STATUS),
      finished: exchange('Cancelling a completed task changes nothing', '/v1/tasks/review-42/cancel', undefined, 200, COMPLETED_STATUS),
      unknown: exchange('An unknown task', '/v1/tasks/review-43/cancel', undefined, 404, errorBody('openai', NOT_FOUND)),
    },
  },
};
