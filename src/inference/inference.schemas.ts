import type { GatewayErrorCode } from '../common/gateway-error';
import type { OperationDoc, ResponseDoc, XExample } from '../common/api-doc';
import type { ParameterObject } from '@nestjs/swagger';
import { CLIENT_HEADERS, CLIENT_SECURITY, HEADERS, INFERENCE_HEADERS, json, jsonResponse, ref, TAGS } from '../common/doc-common';
import { CACHE_MODES, MAX_CACHE_TAG_LENGTH } from './cache-headers';
import { CLIENT_AUTH_ERRORS, errorResponses } from '../common/doc-errors';

export { INFERENCE_SCHEMAS } from './inference-bodies.schemas';

/** The operations of the `/v1/*` client routes (inference.controller.ts); their bodies in inference-bodies.schemas.ts. */

/** What the gateway itself may answer on an inference route (before the backend's answer). */
const INFERENCE_ERRORS: GatewayErrorCode[] = [
  'invalid_request',
  'invalid_params',
  'capability_mismatch',
  'invalid_api_key',
  'tenant_mismatch',
  'model_not_allowed',
  'model_not_found',
  'payload_too_large',
  'auth_rate_limited',
  'queue_full',
  'rate_limit_exceeded',
  'budget_exceeded',
  'worker_error',
  'pool_unready',
  'pool_unavailable',
  'no_healthy_worker',
  'fallback_exhausted',
  'requeue_exhausted',
  'provider_disabled',
  'provider_deleted',
  'drain_timeout',
  'server_shutdown',
  'gateway_overloaded',
  'queue_timeout',
  'request_timeout',
];

/** The model-runner API's cache request headers (validated, then forwarded to the worker). */
const CACHE_HEADERS: ParameterObject[] = [
  {
    name: 'x-cache-mode',
    in: 'header',
    required: false,
    description: 'Prefix-cache control for the backend: `prefix`, `none` or `auto`; anything else is `400 invalid_request` with `param: "x-cache-mode"`.',
    schema: { type: 'string', enum: CACHE_MODES as string[] },
  },
  {
    name: 'x-cache-tag',
    in: 'header',
    required: false,
    description: `Scopes the backend's cache entries; at most ${MAX_CACHE_TAG_LENGTH} characters, else \`400 invalid_request\` with \`param: "x-cache-tag"\`.`,
    schema: { type: 'string', maxLength: MAX_CACHE_TAG_LENGTH },
  },
];

const SUCCESS_HEADERS: ResponseDoc['headers'] = {
  'X-Correlation-Id': HEADERS.correlationId,
  'x-queue-wait-ms': HEADERS.queueWaitMs,
  'x-cache-hit': {
    description: '`true` when the backend reported a prefix-cache hit (`x-cache-hit`), else `false` (also when it said nothing).',
    schema: { type: 'string', enum: ['true', 'false'] },
  },
  'x-cache-tokens-reused': {
    description: 'Prompt tokens the backend served from its cache; `0` when it said nothing.',
    schema: { type: 'integer', minimum: 0 },
  },
  'x-gpu-time-ms': {
    description:
      "Whole answers only: the backend's own processing time as the worker measured it around its backend call (negotiated `gpu_time_ms`), else the time the request held the worker. A stream's headers go out before the backend finished: streams carry `gpu_time_ms` in their final usage instead (docs/api.md).",
    schema: { type: 'integer', minimum: 0 },
  },
  'x-switchboard-model': HEADERS.servingModel,
  'x-switchboard-fallback': HEADERS.fallback,
  'x-ratelimit-limit-requests': HEADERS.rateLimit,
};

const STREAM_NOTE =
  'With `stream: true` the answer starts with the first chunk (`200`, `text/event-stream`); chunks are relayed byte-for-byte. ' +
  "An error after the stream started is one SSE `error` event, whose data is the dialect's error body plus `code`, `kind`, `retriable`, " +
  '`retry_after_ms` and `message` at the top level, and nothing follows it. Codes only seen mid-stream: `worker_disconnected`, ' +
  '`stream_too_large`, `client_too_slow`.';

interface InferenceRoute {
  operationId: string;
  path: string;
  summary: string;
  description: string;
  request: string;
  response: string;
  requestExample: Record<string, unknown>;
  responseExample: Record<string, unknown>;
  /** An SSE transcript; absent for routes that never stream. */
  streamExample?: string;
  anthropic?: boolean;
  /** The route answers an unknown model too (count_tokens' estimate): no `unknown_model` example. */
  answersUnknownModels?: boolean;
}

function inferenceOperation(r: InferenceRoute): OperationDoc {
  const dialect = r.anthropic ? 'anthropic' : 'openai';
  const success: ResponseDoc = {
    description: `The backend's answer, relayed with its status and headers (backend 4xx and 5xx included).${r.streamExample ? ` ${STREAM_NOTE}` : ''}`,
    headers: SUCCESS_HEADERS,
    content: {
      ...json(ref(r.response), { typical: { summary: 'A typical answer', value: r.responseExample } }),
      ...(r.streamExample
        ? { 'text/event-stream': { schema: { type: 'string' }, examples: { stream: { summary: 'A streamed answer', value: r.streamExample } } } }
        : {}),
    },
  };
  const examples: Record<string, XExample> = {
    typical: { summary: 'A typical request', request: { path: r.path, body: r.requestExample }, response: { status: 200, body: r.responseExample } },
  };
  if (!r.answersUnknownModels)
    examples.unknown_model = {
      summary: 'No worker, declared model or recent worker knows the model',
      request: { path: r.path, body: { ...r.requestExample, model: 'gpt-5' } },
      response: {
        status: 404,
        body: r.anthropic
          ? {
              type: 'error',
              error: { type: 'not_found_error', message: "Model 'gpt-5' not found", code: 'model_not_found', kind: 'INVALID_PARAMS', retriable: false },
            }
          : {
              error: {
                message: "Model 'gpt-5' not found",
                type: 'invalid_request_error',
                code: 'model_not_found',
                param: null,
                kind: 'INVALID_PARAMS',
                retriable: false,
              },
            },
      },
    };
  return {
    operationId: r.operationId,
    summary: r.summary,
    description: r.description,
    tags: [TAGS.client],
    security: CLIENT_SECURITY,
    parameters: r.anthropic
      ? [
          ...INFERENCE_HEADERS,
          ...CACHE_HEADERS,
          {
            name: 'anthropic-version',
            in: 'header',
            required: false,
            description: 'Forwarded to the backend.',
            schema: { type: 'string' },
            example: '2023-06-01',
          },
        ]
      : [...INFERENCE_HEADERS, ...CACHE_HEADERS],
    requestBody: { required: true, content: json(ref(r.request), { typical: { summary: 'A typical request', value: r.requestExample } }) },
    responses: { 200: success, ...errorResponses(dialect, INFERENCE_ERRORS) },
    xExamples: examples,
  };
}

const CHAT_REQUEST = {
  model: 'llama3:8b',
  messages: [
    { role: 'system', content: 'Answer briefly.' },
    { role: 'user', content: 'What is Switchboard?' },
  ],
  max_tokens: 64,
};

export const INFERENCE_API = {
  chatCompletions: inferenceOperation({
    operationId: 'createChatCompletion',
    path: '/v1/chat/completions',
    summary: 'OpenAI chat completion',
    description: 'Relayed to a worker serving `model`; `stream: true` answers Server-Sent Events.',
    request: 'ChatCompletionRequest',
    response: 'ChatCompletion',
    requestExample: CHAT_REQUEST,
    responseExample: {
      id: 'chatcmpl-7f3a',
      object: 'chat.completion',
      created: 1795380600,
      model: 'llama3:8b',
      choices: [{ index: 0, message: { role: 'assistant', content: 'An internal AI gateway.' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 21, completion_tokens: 6, total_tokens: 27 },
    },
    streamExample:
      'data: {"id":"chatcmpl-7f3a","object":"chat.completion.chunk","created":1795380600,"model":"llama3:8b","choices":[{"index":0,"delta":{"role":"assistant","content":"An internal"},"finish_reason":null}]}\n\n' +
      'data: {"id":"chatcmpl-7f3a","object":"chat.completion.chunk","created":1795380600,"model":"llama3:8b","choices":[{"index":0,"delta":{"content":" AI gateway."},"finish_reason":"stop"}]}\n\n' +
      'data: [DONE]\n\n',
  }),
  completions: inferenceOperation({
    operationId: 'createCompletion',
    path: '/v1/completions',
    summary: 'OpenAI legacy completion',
    description: 'Relayed to a worker serving `model`; streams with `stream: true`.',
    request: 'CompletionRequest',
    response: 'Completion',
    requestExample: { model: 'llama3:8b', prompt: 'The capital of France is', max_tokens: 8 },
    responseExample: {
      id: 'cmpl-91b2',
      object: 'text_completion',
      created: 1795380600,
      model: 'llama3:8b',
      choices: [{ index: 0, text: ' Paris.', finish_reason: 'stop' }],
      usage: { prompt_tokens: 6, completion_tokens: 2, total_tokens: 8 },
    },
    streamExample:
      'data: {"id":"cmpl-91b2","object":"text_completion","created":1795380600,"model":"llama3:8b","choices":[{"index":0,"text":" Paris.","finish_reason":"stop"}]}\n\n' +
      'data: [DONE]\n\n',
  }),
  responses: inferenceOperation({
    operationId: 'createResponse',
    path: '/v1/responses',
    summary: 'OpenAI Responses API',
    description: 'Relayed to a worker serving `model`; streams with `stream: true`.',
    request: 'ResponseRequest',
    response: 'Response',
    requestExample: { model: 'llama3:8b', input: 'Say hello in French.', max_output_tokens: 16 },
    responseExample: {
      id: 'resp_5c1d',
      object: 'response',
      created_at: 1795380600,
      model: 'llama3:8b',
      status: 'completed',
      output: [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Bonjour !' }] }],
      usage: { input_tokens: 12, output_tokens: 4, total_tokens: 16 },
    },
    streamExample:
      'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":"Bonjour !"}\n\n' +
      'event: response.completed\ndata: {"type":"response.completed","response":{"id":"resp_5c1d","status":"completed"}}\n\n',
  }),
  embeddings: inferenceOperation({
    operationId: 'createEmbedding',
    path: '/v1/embeddings',
    summary: 'OpenAI embeddings',
    description: 'Relayed to a worker serving `model`; never streamed (`stream` is ignored).',
    request: 'EmbeddingRequest',
    response: 'EmbeddingList',
    requestExample: { model: 'nomic-embed-text', input: ['first text', 'second text'] },
    responseExample: {
      object: 'list',
      data: [
        { object: 'embedding', index: 0, embedding: [0.0123, -0.0456, 0.0789] },
        { object: 'embedding', index: 1, embedding: [0.0321, -0.0654, 0.0987] },
      ],
      model: 'nomic-embed-text',
      usage: { prompt_tokens: 6, total_tokens: 6 },
    },
  }),
  messages: inferenceOperation({
    operationId: 'createMessage',
    path: '/v1/messages',
    summary: 'Anthropic Messages',
    description: 'Relayed to a worker serving `model`; streams with `stream: true`. Errors in the Anthropic dialect.',
    request: 'MessageRequest',
    response: 'Message',
    requestExample: { model: 'llama3:8b', max_tokens: 64, messages: [{ role: 'user', content: 'What is Switchboard?' }] },
    responseExample: {
      id: 'msg_01Xa',
      type: 'message',
      role: 'assistant',
      model: 'llama3:8b',
      content: [{ type: 'text', text: 'An internal AI gateway.' }],
      stop_reason: 'end_turn',
      usage: { input_tokens: 12, output_tokens: 6 },
    },
    streamExample:
      'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_01Xa","type":"message","role":"assistant","model":"llama3:8b","content":[]}}\n\n' +
      'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"An internal AI gateway."}}\n\n' +
      'event: message_stop\ndata: {"type":"message_stop"}\n\n',
    anthropic: true,
  }),
  countTokens: inferenceOperation({
    operationId: 'countMessageTokens',
    path: '/v1/messages/count_tokens',
    summary: 'Anthropic token count',
    description:
      "Relayed to a worker whose backend serves `/v1/messages/count_tokens`; else counted by a backend tokenizer (`/tokenize`, llama-server and vLLM); else the gateway's own estimate (about four characters a token), marked `x-switchboard-estimate: true`. Errors in the Anthropic dialect.",
    request: 'CountTokensRequest',
    response: 'MessageTokensCount',
    requestExample: { model: 'llama3:8b', messages: [{ role: 'user', content: 'What is Switchboard?' }] },
    responseExample: { input_tokens: 12 },
    anthropic: true,
    answersUnknownModels: true,
  }),
  models: {
    operationId: 'listModels',
    summary: 'Models that can be served now',
    description:
      'Models of all connected, non-draining workers of enabled providers, deduplicated, plus the aliases whose target is among them; `*` is never listed.',
    tags: [TAGS.client],
    security: CLIENT_SECURITY,
    parameters: CLIENT_HEADERS,
    responses: {
      200: jsonResponse('The models', ref('ModelList'), {
        object: 'list',
        data: [
          { id: 'llama3:8b', object: 'model', created: 1795380000, owned_by: 'local' },
          { id: 'gpt-3.5-turbo', object: 'model', created: 1795380000, owned_by: 'local' },
        ],
      }),
      ...errorResponses('openai', CLIENT_AUTH_ERRORS),
    },
  } satisfies OperationDoc,
};
