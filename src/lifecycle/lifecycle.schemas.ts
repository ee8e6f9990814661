import type { SchemaObject } from '@nestjs/swagger';
import { Errors, GatewayError, GatewayErrorCode } from '../common/gateway-error';
import { errorBody } from '../common/error-dialect';
import type { XExample } from '../common/api-doc';
import { ISO_TIME, ref } from '../common/doc-common';
import { ADMIN_AUTH_CODES } from '../common/doc-errors';

/** `/v1/models/load`, `/v1/models/unload`, `/v1/cache/flush` (governed, admin) and `/admin/audit`. */

const OP_TOKEN_CODES: GatewayErrorCode[] = [
  'op_token_missing',
  'op_token_malformed',
  'op_token_bad_signature',
  'op_token_expired',
  'op_token_replayed',
  'op_token_mismatch',
  'op_token_duplicate_signers',
  'op_token_unknown_signer',
  'op_token_insufficient_signers',
];
/** What every governed operation may answer besides its own refusals. */
export const GOVERNED_CODES: GatewayErrorCode[] = [
  ...ADMIN_AUTH_CODES,
  'lifecycle_disabled',
  'invalid_request',
  'validation_failed',
  ...OP_TOKEN_CODES,
  'audit_unavailable',
];

const modelId: SchemaObject = {
  type: 'string',
  minLength: 1,
  maxLength: 255,
  description: 'The model as the backend names it (HuggingFace id, Ollama tag, path).',
};
const opToken: SchemaObject = {
  type: 'string',
  description:
    'base64url of `{"opToken": {operation, modelId?, evictModel?, pool?, workerId?, replicas?, quantization?, gpuMemoryBudgetMB?, maxContextLength?, scope?, tenantId?, tag?, issuedAt, nonce}, "signatures": {signer: Ed25519 signature}}` (docs/lifecycle.md); `switchboard op-token` creates one and `switchboard op-token sign` adds each signature.',
};
const target: Record<string, SchemaObject> = {
  pool: { type: 'string', minLength: 1, maxLength: 64, description: 'Only workers of this pool (provider); absent = every pool.' },
  workerId: { type: 'string', minLength: 1, maxLength: 128, description: 'Exactly this worker (`GET /admin/workers`).' },
};
const mb: SchemaObject = { type: 'integer', minimum: 0 };

export const TOKEN =
  'eyJvcFRva2VuIjp7Im9wZXJhdGlvbiI6Im1vZGVsLXVubG9hZCIsIm1vZGVsSWQiOiJsbGFtYTM6OGIiLCJ3b3JrZXJJZCI6InctMSIsImlzc3VlZEF0IjoxNzY0ODkyODAwLCJub25jZSI6IjlmMmM0ZTdhMWIzZDVmNjAifSwic2lnbmF0dXJlcyI6eyJhbGljZSI6ImxMQUdhanFKUnVoNk0ydnV4WVpPZlgtYXA0dVVpZTFqbUJGa3JPMV9sell4VDJaWXBWbmpMT2Z1VEtEZWNJUWwycmJuUkhaa2gtNHJ2LS1mUklHMUFRIiwiYm9iIjoiT3ZxbWZ5T2xHRFBpeWw0TWk5Z2tDTU5Ea3l5RlRMTWxWRUJ2dVJ2UE1WOThqWHgtOGMzUU1qb2FiaVJaakpyUU1pcVowLW1DLUZRdXNwNG1oTm5vQ2cifX0';
const WORKER = { workerId: 'w-7c9e6679-7425-40de-944b-e07fc1f90ae7', name: 'gpu-node-1', pool: 'local' };

export const LOAD_STARTED = {
  taskId: 'load-3f1c2b9e-8d4a-4c1e-9b7a-2e5d6f8a9c01',
  status: 'loading',
  progress: 0,
  eta: null,
  modelId: 'llama3:70b',
  workers: [{ ...WORKER, status: 'sent', progress: 0 }],
};
export const LOAD_DONE = {
  ...LOAD_STARTED,
  status: 'completed',
  progress: 1,
  eta: 0,
  workers: [{ ...WORKER, status: 'completed', progress: 1, gpuMemoryUsedMB: 38500, loadTimeMs: 287000 }],
  gpuMemoryUsedMB: 38500,
  loadTimeMs: 287000,
};
export const UNLOADED = {
  modelId: 'llama3:8b',
  workers: [{ ...WORKER, status: 'completed', progress: 1, gpuMemoryFreedMB: 8200 }],
  gpuMemoryFreedMB: 8200,
  kvCacheFlushed: true,
};
export const FLUSHED = {
  flushed: true,
  entriesRemoved: 1234,
  memoryFreedMB: 3500,
  workers: [{ ...WORKER, status: 'completed', progress: 1, entriesRemoved: 1234, memoryFreedMB: 3500 }],
};

export const body = (e: GatewayError) => errorBody('openai', e);
export const insufficient = Errors.opTokenInsufficientSigners(1, 2, 3);
export const running = Errors.conflict(
  `A model-load or model-unload of 'llama3:70b' is already running on worker 'gpu-node-1' (${WORKER.workerId}): task ${LOAD_STARTED.taskId}`,
).with({
  fields: { task_id: LOAD_STARTED.taskId },
});

export const LOAD_EXAMPLES: Record<string, XExample> = {
  typical: {
    summary: 'Load a model on one worker of a pool, evicting another; poll the task',
    request: {
      path: '/v1/models/load',
      body: { modelId: 'llama3:70b', quantization: 'awq-4bit', gpuMemoryBudgetMB: 40000, evictModel: 'llama3:8b', verifiedOpToken: TOKEN, pool: 'local' },
    },
    response: { status: 202, body: LOAD_STARTED },
  },
  running: {
    summary: 'The same model is already loading on that worker',
    request: { path: '/v1/models/load', body: { modelId: 'llama3:70b', verifiedOpToken: TOKEN, workerId: WORKER.workerId } },
    response: { status: 409, body: body(running) },
  },
  signers: {
    summary: 'One signer where the governance needs two',
    request: { path: '/v1/models/load', body: { modelId: 'llama3:70b', verifiedOpToken: TOKEN } },
    response: { status: 403, body: body(insufficient) },
  },
};

export const AUDIT_ROW = {
  id: 42,
  at: '2026-12-05T10:15:02.000Z',
  action: 'lifecycle.model-unload',
  actor: { kind: 'admin-token', subject: 'admin-token', name: null },
  role: 'admin',
  source_address: '10.0.0.12',
  correlation_id: '3f1c2b9e-7d4a-4c1e-9b2f-5a6d7e8f9012',
  target_id: null,
  summary: null,
  operation: 'model-unload',
  model_id: 'llama3:8b',
  scope: null,
  target: { pool: 'local', worker_id: null, replicas: null, tenant_id: null, tag: null, evict_model: null },
  workers: [WORKER.workerId],
  signers: ['alice', 'bob'],
  nonce: '9f2c4e7a1b3d5f60',
  admin_identity: 'sha256:5e884898da28',
  outcome: 'completed',
  status: 200,
  error_code: null,
  error: null,
  task_id: 'unload-0c5b1f2e-3a4d-4e6f-8a9b-1c2d3e4f5a6b',
};

const nullableString: SchemaObject = { type: 'string', nullable: true };

export const LIFECYCLE_SCHEMAS: Record<string, SchemaObject> = {
  LoadModelRequest: {
    type: 'object',
    required: ['modelId', 'verifiedOpToken'],
    additionalProperties: false,
    properties: {
      modelId,
      quantization: { type: 'string', minLength: 1, maxLength: 64, description: 'e.g. `awq-4bit`, `gptq-4bit`, `fp16`, `bf16`; passed to the backend.' },
      maxContextLength: { type: 'integer', minimum: 1 },
      gpuMemoryBudgetMB: { type: 'integer', minimum: 1, description: 'Workers whose runner reports less free GPU memory are not chosen.' },
      evictModel: { ...modelId, description: 'Unloaded first on the same worker (after its in-flight requests drain).' },
      verifiedOpToken: opToken,
      ...target,
      replicas: { type: 'integer', minimum: 1, maximum: 64, description: 'How many workers load it (default 1; 1 with `workerId`).' },
    },
  },
  UnloadModelRequest: {
    type: 'object',
    required: ['modelId', 'verifiedOpToken'],
    additionalProperties: false,
    properties: { modelId, verifiedOpToken: opToken, ...target },
  },
  CacheFlushRequest: {
    type: 'object',
    required: ['scope', 'verifiedOpToken'],
    additionalProperties: false,
    properties: {
      scope: { type: 'string', enum: ['all', 'model', 'tenant', 'tag'] },
      modelId: { ...modelId, nullable: true, description: 'Scope `model` only (required there).' },
      tenantId: { type: 'string', minLength: 1, maxLength: 64, nullable: true, description: 'Scope `tenant` only (required there).' },
      tag: { type: 'string', minLength: 1, maxLength: 128, nullable: true, description: 'Scope `tag` only (required there).' },
      verifiedOpToken: opToken,
      ...target,
    },
  },
  LifecycleWorker: {
    type: 'object',
    description: "One worker's part of an operation.",
    required: ['workerId', 'name', 'pool', 'status', 'progress'],
    properties: {
      workerId: { type: 'string' },
      name: { type: 'string' },
      pool: { type: 'string' },
      status: {
        type: 'string',
        enum: ['draining', 'sent', 'accepted', 'loading', 'completed', 'failed', 'unsupported'],
        description: '`draining`: waiting for the in-flight requests of the model to unload (or evict) before sending.',
      },
      progress: { type: 'number', minimum: 0, maximum: 1 },
      eta: { type: 'number', minimum: 0, description: 'Seconds, as the worker estimated.' },
      gpuMemoryUsedMB: mb,
      gpuMemoryFreedMB: mb,
      entriesRemoved: mb,
      memoryFreedMB: mb,
      loadTimeMs: mb,
      error: {
        type: 'string',
        description: '`<reason>: <detail>`; reasons: `failed`, `unsupported`, `worker_disconnected`, `timeout`, `drain_timeout`, `gateway_restarted`.',
      },
    },
  },
  LoadTask: {
    type: 'object',
    required: ['taskId', 'status', 'progress', 'eta', 'modelId', 'workers'],
    properties: {
      taskId: { type: 'string' },
      status: { type: 'string', enum: ['loading', 'completed', 'failed'] },
      progress: { type: 'number', minimum: 0, maximum: 1, description: 'Mean over the workers.' },
      eta: { type: 'number', minimum: 0, nullable: true, description: 'Seconds; null until every loading worker gave an estimate.' },
      modelId: { type: 'string' },
      workers: { type: 'array', items: ref('LifecycleWorker') },
      gpuMemoryUsedMB: { ...mb, description: 'Sum over the workers that reported it.' },
      loadTimeMs: { ...mb, description: 'When completed: the slowest worker, from sending to completion.' },
      error: { type: 'string', description: 'When failed: each failing worker and why.' },
    },
  },
  UnloadResult: {
    type: 'object',
    required: ['modelId', 'workers', 'kvCacheFlushed'],
    properties: {
      modelId: { type: 'string' },
      workers: { type: 'array', items: ref('LifecycleWorker') },
      gpuMemoryFreedMB: mb,
      kvCacheFlushed: { type: 'boolean' },
    },
  },
  CacheFlushResult: {
    type: 'object',
    required: ['flushed', 'workers'],
    properties: { flushed: { type: 'boolean' }, entriesRemoved: mb, memoryFreedMB: mb, workers: { type: 'array', items: ref('LifecycleWorker') } },
  },
  AuditRow: {
    type: 'object',
    required: [
      'id',
      'at',
      'action',
      'actor',
      'role',
      'source_address',
      'correlation_id',
      'target_id',
      'summary',
      'operation',
      'model_id',
      'scope',
      'target',
      'workers',
      'signers',
      'nonce',
      'admin_identity',
      'outcome',
      'status',
      'error_code',
      'error',
      'task_id',
    ],
    properties: {
      id: { type: 'integer', description: 'Increases with every row.' },
      at: ISO_TIME,
      action: { type: 'string', description: '`keys.create`, `workers.drain`, `config.reload`, `lifecycle.model-load`… (docs/enterprise.md, "Audit trail").' },
      actor: {
        type: 'object',
        nullable: true,
        description: 'Who: null on a request refused before it was authenticated.',
        required: ['kind', 'subject', 'name'],
        properties: { kind: { type: 'string', enum: ['admin-token', 'sso', 'sighup'] }, subject: { type: 'string' }, name: nullableString },
      },
      role: { type: 'string', nullable: true, enum: ['viewer', 'operator', 'admin'] },
      source_address: { type: 'string', nullable: true, description: 'The client address (through trusted proxies).' },
      correlation_id: { type: 'string', nullable: true, description: "The request's `X-Correlation-Id`." },
      target_id: { type: 'string', nullable: true, description: 'A key or tenant id, a provider, pool or worker name, `config`.' },
      summary: { type: 'object', nullable: true, additionalProperties: true, description: 'What changed; secrets as `[redacted]`, never their values.' },
      operation: {
        type: 'string',
        enum: ['model-load', 'model-unload', 'cache-flush', 'admin'],
        description: '`admin` for every action but a lifecycle operation.',
      },
      model_id: nullableString,
      scope: nullableString,
      target: {
        type: 'object',
        required: ['pool', 'worker_id', 'replicas', 'tenant_id', 'tag', 'evict_model'],
        properties: {
          pool: nullableString,
          worker_id: nullableString,
          replicas: { type: 'integer', nullable: true },
          tenant_id: nullableString,
          tag: nullableString,
          evict_model: { type: 'string', nullable: true, description: "A load's `evictModel`: unloaded on the chosen workers first." },
        },
      },
      workers: { type: 'array', items: { type: 'string' }, description: 'Ids of the workers it was sent to.' },
      signers: { type: 'array', items: { type: 'string' }, nullable: true, description: 'As the token named them (verified unless `refused`).' },
      nonce: nullableString,
      admin_identity: { type: 'string', nullable: true, description: '`sha256:` and 12 hex digits of the admin token presented; never the token.' },
      outcome: { type: 'string', enum: ['accepted', 'refused', 'completed', 'failed'] },
      status: {
        type: 'integer',
        description: '`refused`: the status answered; `accepted`: 202; `completed` / `failed`: 200 or 502 (what an unload or flush answers).',
      },
      error_code: nullableString,
      error: nullableString,
      task_id: nullableString,
    },
  },
  AuditList: {
    type: 'object',
    required: ['object', 'data', 'next_before'],
    properties: {
      object: { type: 'string', enum: ['list'] },
      data: { type: 'array', items: ref('AuditRow') },
      next_before: { type: 'integer', nullable: true, description: 'Pass as `before` for the next (older) page; null on the last one.' },
    },
  },
};
