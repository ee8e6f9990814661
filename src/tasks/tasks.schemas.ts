import type { SchemaObject } from '@nestjs/swagger';
import { ARTIFACTS_SCHEMAS } from '../artifacts/artifacts.schemas';
import { NULLABLE_ISO_TIME, ref } from '../common/doc-common';

/** `/v1/tasks`: asynchronous tasks with SSE events (docs/tasks.md). */

const count: SchemaObject = { type: 'integer', minimum: 0 };
const id: SchemaObject = { type: 'string', pattern: '^[A-Za-z0-9._:-]{1,128}$' };
/** `tags` and `parents` of a task are its job artifact's: the same schema as `POST /v1/artifacts`. */
const ARTIFACT_FIELDS = ARTIFACTS_SCHEMAS.NewArtifact.properties as Record<string, SchemaObject>;

export const TASKS_SCHEMAS: Record<string, SchemaObject> = {
  TaskRequest: {
    type: 'object',
    description:
      'Either `messages` (sent to the worker as a streaming chat completion) or `prompt` (a streaming completion). The gateway fields ' +
      '(`task_id`, `session_id`, `ctx`, `pool_id`, `priority`, `output_mode`, `budget`, `tags`, `parents`, `parent`) are never forwarded; every other field is (sampling parameters).',
    required: ['model', 'max_tokens'],
    properties: {
      task_id: { ...id, description: 'Chosen by the client; one that exists for the tenant is `409 conflict`. Default: `t-<uuid>`.' },
      session_id: { ...id, description: 'Groups tasks under one budget.' },
      model: { type: 'string', minLength: 1 },
      messages: {
        type: 'array',
        minItems: 1,
        items: { type: 'object', required: ['role'], properties: { role: { type: 'string' } }, additionalProperties: true },
      },
      prompt: {
        oneOf: [
          { type: 'string', minLength: 1 },
          { type: 'array', minItems: 1, items: { type: 'string' } },
        ],
      },
      max_tokens: { type: 'integer', minimum: 1 },
      ctx: {
        type: 'integer',
        minimum: 1,
        description: 'The context the task needs: prompt (estimated) + `max_tokens` must fit, and so must a worker that takes it.',
      },
      pool_id: {
        type: 'string',
        description: 'Pins the task to this pool; an unknown pool is `400 invalid_params`, one that cannot serve is `503 pool_unready`.',
      },
      priority: { type: 'string', enum: ['high', 'normal', 'low'], description: "Capped at the tenant's `max_priority`; default as `x-priority`." },
      output_mode: { type: 'string', description: '`text`, `json` or `edits`: recorded on the artifact only; other values are ignored.' },
      budget: {
        type: 'object',
        description: "The session's budget, capped by the tenant's `session_tokens` / `session_time_secs`.",
        properties: { tokens: { type: 'integer', minimum: 1 }, time_secs: { type: 'number', minimum: 0.001 } },
        additionalProperties: true,
      },
      tags: { ...ARTIFACT_FIELDS.tags, description: "The job artifact's tags, validated as on `POST /v1/artifacts`." },
      parents: { ...ARTIFACT_FIELDS.parents, description: "The job artifact's lineage: ids of artifacts it derives from (recorded as given, not looked up)." },
      parent: { ...ARTIFACT_FIELDS.parent, description: 'The same lineage as one id or a list; joined with `parents`.' },
      temperature: { type: 'number' },
      seed: { type: 'integer' },
    },
    additionalProperties: true,
  },
  TaskAccepted: {
    type: 'object',
    required: ['task_id', 'queue_position', 'predicted_start_ms', 'stream_url', 'status_url'],
    properties: {
      task_id: { type: 'string' },
      queue_position: { ...count, description: "Place in its pool's line (1 = next); 0 when a worker took it at once." },
      predicted_start_ms: {
        type: 'integer',
        minimum: 0,
        nullable: true,
        description: 'Milliseconds until it is expected to start; null while the pool has no drain history.',
      },
      stream_url: { type: 'string' },
      status_url: { type: 'string' },
    },
  },
  TaskStatus: {
    type: 'object',
    required: ['task_id', 'status', 'model', 'queue_position', 'tokens_out', 'created_at', 'last_event_id', 'stream_url', 'status_url'],
    properties: {
      task_id: { type: 'string' },
      status: { type: 'string', enum: ['queued', 'running', 'completed', 'failed', 'cancelled'] },
      model: { type: 'string' },
      served_model: { type: 'string', nullable: true },
      pool_id: { type: 'string', nullable: true },
      session_id: { type: 'string', nullable: true },
      queue_position: count,
      predicted_start_ms: { type: 'integer', minimum: 0, nullable: true },
      created_at: { type: 'string', format: 'date-time' },
      started_at: NULLABLE_ISO_TIME,
      ended_at: NULLABLE_ISO_TIME,
      queue_wait_ms: count,
      decode_time_ms: count,
      tokens_out: count,
      last_event_id: { ...count, description: 'Id of its last event so far.' },
      error: { allOf: [ref('SSEError')], nullable: true },
      artifact_id: { type: 'string', nullable: true, description: 'The artifact the task left, once it ended (when an artifact registry is configured).' },
      stream_url: { type: 'string' },
      status_url: { type: 'string' },
    },
  },
  SSEStarted: {
    type: 'object',
    required: ['queue_position', 'predicted_start_ms'],
    properties: { queue_position: count, predicted_start_ms: { type: 'integer', minimum: 0, nullable: true } },
  },
  SSEToken: { type: 'object', required: ['t', 'i'], properties: { t: { type: 'string' }, i: count } },
  SSEMetrics: {
    type: 'object',
    description: 'Additive: clients must ignore fields they do not know.',
    properties: {
      queue_depth: count,
      queue_position: count,
      tokens_out: count,
      budget_remaining: { type: 'object', properties: { tokens: count, time_secs: count } },
    },
    additionalProperties: true,
  },
  SSEEnd: {
    type: 'object',
    required: ['tokens_out', 'decode_time_ms', 'decode_ms'],
    properties: { tokens_out: count, decode_time_ms: count, decode_ms: count },
  },
  SSEError: {
    type: 'object',
    required: ['code', 'message', 'retriable'],
    properties: {
      code: { type: 'string', description: 'A gateway error code, or `cancelled` (the client cancelled the task).' },
      message: { type: 'string' },
      retriable: { type: 'boolean' },
      retry_after_ms: count,
      kind: { type: 'string' },
      engine: { type: 'string' },
      pool_id: { type: 'string' },
    },
    additionalProperties: true,
  },
};
