import type { SchemaObject } from '@nestjs/swagger';
import { Errors, GatewayErrorCode } from '../common/gateway-error';
import { errorBody } from '../common/error-dialect';
import { MAX_PARENTS, MAX_TAGS, newRecord } from './artifact-record';
import { buildJobArtifact } from './job-artifact';
import { DEFAULT_LIST_LIMIT, encodeCursor, MAX_LIST_LIMIT } from './parse-artifact-request';
import type { OperationDoc, XExample } from '../common/api-doc';
import { CLIENT_HEADERS, CLIENT_SECURITY, json, jsonResponse, ref, TAGS } from '../common/doc-common';
import { CLIENT_AUTH_ERRORS, errorResponses } from '../common/doc-errors';

/** `/v1/artifacts`: the artifact registry (docs/artifacts.md). */

const ARTIFACT_ID: SchemaObject = {
  type: 'string',
  pattern: '^[0-9a-f]{64}$',
  description: 'SHA-256 (lower-case hex) of the canonical record; see docs/artifacts.md.',
};
const tagSchema: SchemaObject = { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._:/=+@-]{0,127}$' };
const sessionSchema: SchemaObject = { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$' };
const kindSchema: SchemaObject = { type: 'string', pattern: '^[a-z][a-z0-9_-]{0,31}$' };

const metadataFields: Record<string, SchemaObject> = {
  object: { type: 'string', enum: ['artifact'] },
  id: ARTIFACT_ID,
  kind: { ...kindSchema, description: '`job` for the record of a task; `plan`, `summary`, `diff`, `trace`, … for client artifacts.' },
  session_id: { ...sessionSchema, nullable: true },
  job_id: { type: 'string', nullable: true, description: 'The task id, for `job` artifacts.' },
  tags: { type: 'array', items: tagSchema, description: 'Sorted, without duplicates.' },
  parents: { type: 'array', items: ARTIFACT_ID, description: 'Lineage: the artifacts this one derives from (sorted).' },
  metadata: { type: 'object', additionalProperties: true },
  size: { type: 'integer', minimum: 0, description: 'Bytes of `content` as canonical JSON.' },
  created_at: { type: 'string', format: 'date-time', description: 'When it was first stored (a re-post keeps it).' },
  transcript_url: { type: 'string', nullable: true, description: '`job` artifacts: where their SSE transcript is served.' },
};
const METADATA_REQUIRED = Object.keys(metadataFields);

// Examples built with the registry's own code, so their ids are the real content addresses.
const CREATED_AT = Date.UTC(2026, 10, 22, 20, 50);
const PLAN_BODY = {
  kind: 'plan',
  session_id: 'sess-42',
  tags: ['agent:planner', 'v1'],
  metadata: { title: 'Refactor the parser' },
  content: { steps: ['Split tokenizer and parser', 'Add error recovery', 'Benchmark'] },
};
const plan = newRecord(
  { kind: PLAN_BODY.kind, sessionId: PLAN_BODY.session_id, tags: PLAN_BODY.tags, parents: [], metadata: PLAN_BODY.metadata, content: PLAN_BODY.content },
  { tenant: 'team-a', jobId: null, createdAt: CREATED_AT },
);
const TRANSCRIPT =
  'id: 1\nevent: started\ndata: {"queue_position":0,"predicted_start_ms":0}\n\n' +
  'id: 2\nevent: token\ndata: {"t":"Hello","i":0}\n\n' +
  'id: 3\nevent: end\ndata: {"tokens_out":1,"decode_time_ms":41,"decode_ms":41}\n\n';
const job = buildJobArtifact(
  {
    jobId: 'task-7f3a',
    sessionId: 'sess-42',
    tenant: 'team-a',
    params: { model: 'llama3:8b', messages: [{ role: 'user', content: 'hi' }], max_tokens: 64, temperature: 0.2 },
    maxTokens: 64,
    engine: 'vllm',
    engineVersion: '0.6.3',
    modelRef: 'llama3:8b',
    pool: 'local',
    status: 'completed',
    tokensOut: 1,
    decodeTimeMs: 41,
    transcript: TRANSCRIPT,
    parents: [plan.id],
    createdAt: CREATED_AT + 60_000,
  },
  { maxBytes: 1024 * 1024, inlineTranscriptBytes: 64 * 1024, maxTranscriptBytes: 4 * 1024 * 1024 },
).record;

function metadataOf(r: typeof plan) {
  return {
    object: 'artifact',
    id: r.id,
    kind: r.kind,
    session_id: r.sessionId,
    job_id: r.jobId,
    tags: r.tags,
    parents: r.parents,
    metadata: r.metadata,
    size: r.size,
    created_at: new Date(r.createdAt).toISOString(),
    transcript_url: r.kind === 'job' ? `/v1/artifacts/${r.id}/transcript` : null,
  };
}
const PLAN = metadataOf(plan);
const JOB = metadataOf(job);

export const ARTIFACTS_SCHEMAS: Record<string, SchemaObject> = {
  NewArtifact: {
    type: 'object',
    required: ['kind', 'content'],
    properties: {
      kind: { ...kindSchema, description: 'Any lower-case name but `job` (reserved for task records): `plan`, `summary`, `diff`, `trace`, …' },
      content: { description: 'Any JSON value but null; hashed as canonical JSON.' },
      session_id: sessionSchema,
      tags: {
        type: 'array',
        maxItems: MAX_TAGS,
        items: tagSchema,
        description: 'Exact-match labels for `GET /v1/artifacts?tag=`; a set (order and duplicates do not matter).',
      },
      parents: {
        type: 'array',
        maxItems: MAX_PARENTS,
        items: ARTIFACT_ID,
        description: "Ids of this tenant's artifacts it derives from; an unknown one is a 400 naming it.",
      },
      parent: {
        oneOf: [ARTIFACT_ID, { type: 'array', maxItems: MAX_PARENTS, items: ARTIFACT_ID }],
        description: "The same lineage under the task API issue's name: one id or a list; joined with `parents` (each id once, at most 32 together).",
      },
      metadata: { type: 'object', additionalProperties: true, description: 'Free-form; part of the id.' },
    },
    additionalProperties: false,
  },
  ArtifactMetadata: { type: 'object', required: METADATA_REQUIRED, properties: metadataFields },
  Artifact: {
    type: 'object',
    required: [...METADATA_REQUIRED, 'content'],
    properties: {
      ...metadataFields,
      content: { description: 'As stored (canonical JSON). `job` artifacts: see JobArtifactContent.' },
    },
  },
  JobArtifactContent: {
    type: 'object',
    description: 'The content of a `job` artifact (what every task leaves, also on failure).',
    required: ['job_id', 'status', 'model_ref', 'engine', 'engine_version', 'params', 'ctx', 'tokens_out', 'decode_time_ms', 'transcript'],
    properties: {
      job_id: { type: 'string' },
      session_id: { type: 'string' },
      status: { type: 'string', enum: ['completed', 'failed', 'cancelled'] },
      model_ref: { type: 'string' },
      pool: { type: 'string' },
      engine: {
        type: 'string',
        nullable: true,
        description: "The worker's inference server (`vllm`, `llama-server`, …); null when unknown (the task never ran, or its worker did not say).",
      },
      engine_version: { type: 'string', nullable: true, description: 'Null when unknown.' },
      seed: { type: 'integer' },
      output_mode: { type: 'string', enum: ['text', 'json', 'edits'] },
      params: {
        type: 'object',
        nullable: true,
        additionalProperties: true,
        description:
          'The request parameters; `messages`, `prompt`, `input` and `system` (at any depth) are `[redacted]`. Null when larger than `artifacts.max_bytes`.',
      },
      params_omitted_bytes: { type: 'integer' },
      max_tokens: { type: 'integer' },
      ctx: {
        type: 'integer',
        nullable: true,
        description: "The client's `ctx`, else the context length the serving worker advertised for the model; null when unknown.",
      },
      tokens_out: { type: 'integer' },
      decode_time_ms: { type: 'number' },
      error: {
        type: 'object',
        required: ['code', 'message'],
        properties: { code: { type: 'string' }, message: { type: 'string' }, retriable: { type: 'boolean' } },
      },
      transcript: {
        type: 'object',
        required: ['storage', 'bytes', 'sha256', 'truncated'],
        properties: {
          storage: { type: 'string', enum: ['inline', 'separate'] },
          bytes: { type: 'integer' },
          sha256: { type: 'string', pattern: '^[0-9a-f]{64}$' },
          truncated: { type: 'boolean' },
          original_bytes: { type: 'integer' },
          text: { type: 'string', description: '`inline` only (and `separate` with `?include=transcript`).' },
        },
      },
    },
  },
  ArtifactList: {
    type: 'object',
    required: ['object', 'data', 'has_more', 'next_cursor'],
    properties: {
      object: { type: 'string', enum: ['list'] },
      data: { type: 'array', items: ref('ArtifactMetadata'), description: 'Newest first; metadata only.' },
      has_more: { type: 'boolean' },
      next_cursor: { type: 'string', nullable: true, description: 'Pass as `cursor` for the next page; null on the last one.' },
    },
  },
};

const ERRORS: GatewayErrorCode[] = [...CLIENT_AUTH_ERRORS, 'invalid_params', 'tenant_mismatch'];
const body = (error: Parameters<typeof errorBody>[1]) => errorBody('openai', error);
const notFound = Errors.notFound('Artifact', '0000000000000000000000000000000000000000000000000000000000000000');
const idParam = { name: 'id', in: 'path' as const, required: true, description: 'The artifact id.', schema: ARTIFACT_ID, example: plan.id };
const query = (name: string, description: string, schema: SchemaObject, example?: unknown) => ({
  name,
  in: 'query' as const,
  required: false,
  description,
  schema,
  ...(example !== undefined ? { example } : {}),
});

const BAD_FIELD = Errors.invalidParams("'tags[1]' must be 1-128 characters of A-Z a-z 0-9 . _ : / = + @ -, starting with a letter or digit", 'tags[1]');
const UNKNOWN_PARENT = Errors.invalidParams(`Unknown parent artifact '${'ab'.repeat(32)}'`, 'parents[0]');

const createExamples: Record<string, XExample> = {
  created: { summary: 'A plan, stored', request: { path: '/v1/artifacts', body: PLAN_BODY }, response: { status: 201, body: PLAN } },
  again: {
    summary: 'The same artifact again: nothing changes',
    request: { path: '/v1/artifacts', body: { ...PLAN_BODY, tags: ['v1', 'agent:planner'] } },
    response: { status: 200, body: PLAN },
  },
  bad_tag: {
    summary: 'A malformed field',
    request: { path: '/v1/artifacts', body: { ...PLAN_BODY, tags: ['v1', 'has space'] } },
    response: { status: 400, body: body(BAD_FIELD) },
  },
  unknown_parent: {
    summary: 'A parent the tenant does not have',
    request: { path: '/v1/artifacts', body: { ...PLAN_BODY, parents: ['ab'.repeat(32)] } },
    response: { status: 400, body: body(UNKNOWN_PARENT) },
  },
  too_large: {
    summary: 'A body above artifacts.max_bytes',
    request: { path: '/v1/artifacts', body: { kind: 'trace', content: '…1 MiB…' } },
    response: { status: 413, body: body(Errors.payloadTooLarge(1048576)) },
  },
};

export const ARTIFACTS_API = {
  create: {
    operationId: 'createArtifact',
    summary: 'Store an artifact',
    description:
      "Stores a client artifact (plan, summary, diff, trace, …) in the caller's tenant under its content address. `201` when stored; `200` with the stored artifact " +
      '(its first `created_at`) when the tenant already had it. Bodies above `artifacts.max_bytes` are `413 payload_too_large`; an artifact that would take the tenant ' +
      "past `artifacts.max_bytes_per_tenant` stored bytes is `413 artifact_quota_exceeded`. Each call counts against the tenant's and key's request limits (`429 rate_limit_exceeded`).",
    tags: [TAGS.artifacts],
    security: CLIENT_SECURITY,
    parameters: CLIENT_HEADERS,
    requestBody: { required: true, content: json(ref('NewArtifact'), { typical: { summary: 'A plan', value: PLAN_BODY } }) },
    responses: {
      200: jsonResponse('Already stored: the stored artifact', ref('ArtifactMetadata'), PLAN),
      201: jsonResponse('Stored', ref('ArtifactMetadata'), PLAN),
      ...errorResponses('openai', [...ERRORS, 'payload_too_large', 'artifact_quota_exceeded', 'rate_limit_exceeded'], {
        invalid_params: BAD_FIELD,
        payload_too_large: Errors.payloadTooLarge(1048576),
      }),
    },
    xExamples: createExamples,
  },
  list: {
    operationId: 'listArtifacts',
    summary: "The tenant's artifacts, newest first",
    description: `Metadata only. Filters combine (AND); \`tag\` is an exact match. Job artifacts appear once written (within \`artifacts.flush_interval_secs\`).`,
    tags: [TAGS.artifacts],
    security: CLIENT_SECURITY,
    parameters: [
      ...CLIENT_HEADERS,
      query('session_id', 'Only this session.', sessionSchema, 'sess-42'),
      query('tag', 'Only artifacts with this tag.', tagSchema, 'agent:planner'),
      query('kind', 'Only this kind.', kindSchema, 'job'),
      query('limit', `Page size (default ${DEFAULT_LIST_LIMIT}).`, { type: 'integer', minimum: 1, maximum: MAX_LIST_LIMIT }, 20),
      query('cursor', '`next_cursor` of the previous page.', { type: 'string' }),
    ],
    responses: {
      200: jsonResponse('A page', ref('ArtifactList'), { object: 'list', data: [JOB, PLAN], has_more: true, next_cursor: encodeCursor(plan) }),
      ...errorResponses('openai', ERRORS, { invalid_params: Errors.invalidParams("Query parameter 'limit' must be an integer from 1 to 100", 'limit') }),
    },
    xExamples: {
      session: {
        summary: "A session's artifacts",
        request: { path: '/v1/artifacts?session_id=sess-42&limit=2' },
        response: { status: 200, body: { object: 'list', data: [JOB, PLAN], has_more: false, next_cursor: null } },
      },
      bad_limit: {
        summary: 'A malformed parameter',
        request: { path: '/v1/artifacts?limit=1000' },
        response: { status: 400, body: body(Errors.invalidParams("Query parameter 'limit' must be an integer from 1 to 100", 'limit')) },
      },
    },
  },
  get: {
    operationId: 'getArtifact',
    summary: 'One artifact with its content and metadata',
    description:
      "`404` for ids the caller's tenant does not have (another tenant's included). A job's transcript stored apart from its content is left out " +
      'unless `include=transcript`; `GET /v1/artifacts/{id}/transcript` serves it either way. A job artifact can be read as soon as its id is known, before it is written.',
    tags: [TAGS.artifacts],
    security: CLIENT_SECURITY,
    parameters: [
      ...CLIENT_HEADERS,
      idParam,
      query('include', '`transcript`: put a separately stored transcript in `content.transcript.text`.', { type: 'string', enum: ['transcript'] }),
    ],
    responses: {
      200: {
        description: 'The artifact',
        content: json(ref('Artifact'), {
          plan: { summary: 'A client artifact', value: { ...PLAN, content: plan.content } },
          job: { summary: 'The record of a task', value: { ...JOB, content: job.content } },
        }),
      },
      ...errorResponses('openai', [...ERRORS, 'not_found'], { not_found: notFound }),
    },
    xExamples: {
      plan: {
        summary: 'A client artifact',
        request: { path: `/v1/artifacts/${plan.id}` },
        response: { status: 200, body: { ...PLAN, content: plan.content } },
      },
      job: { summary: 'The record of a task', request: { path: `/v1/artifacts/${job.id}` }, response: { status: 200, body: { ...JOB, content: job.content } } },
      unknown: {
        summary: 'Not an artifact of this tenant',
        request: { path: `/v1/artifacts/${'0'.repeat(64)}` },
        response: { status: 404, body: body(notFound) },
      },
    },
  },
  transcript: {
    operationId: 'getArtifactTranscript',
    summary: "A job artifact's SSE transcript",
    description:
      "The task's events as a stream reader received them (`id:`, `event:`, `data:` lines), inline or stored apart. A transcript above `artifacts.max_transcript_bytes` " +
      'keeps its head and tail with a `: transcript truncated, N bytes omitted` comment between. `404` for artifacts without a transcript.',
    tags: [TAGS.artifacts],
    security: CLIENT_SECURITY,
    parameters: [...CLIENT_HEADERS, { ...idParam, example: job.id }],
    responses: {
      200: {
        description: 'The transcript',
        content: { 'text/event-stream': { schema: { type: 'string' }, examples: { transcript: { summary: 'A completed task', value: TRANSCRIPT } } } },
      },
      ...errorResponses('openai', [...ERRORS, 'not_found'], { not_found: Errors.notFound('Transcript of artifact', plan.id) }),
    },
    xExamples: {
      none: {
        summary: 'An artifact without a transcript',
        request: { path: `/v1/artifacts/${plan.id}/transcript` },
        response: { status: 404, body: body(Errors.notFound('Transcript of artifact', plan.id)) },
      },
    },
  },
} satisfies Record<string, OperationDoc>;
