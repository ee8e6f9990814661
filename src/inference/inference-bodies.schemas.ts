import type { SchemaObject } from '@nestjs/swagger';

/**
 * Bodies of the `/v1/*` client routes. The gateway reads only `model`, `stream` and what routing needs and
 * forwards the raw body, so request schemas list the usual fields and allow any other; answers
 * are the backend's (typical shapes below), relayed with its status.
 */

const usage: SchemaObject = {
  type: 'object',
  properties: { prompt_tokens: { type: 'integer' }, completion_tokens: { type: 'integer' }, total_tokens: { type: 'integer' } },
  additionalProperties: true,
};

const model: SchemaObject = { type: 'string', minLength: 1, description: 'A model a worker serves, or an alias ([routing](routing.md)).' };
const stream: SchemaObject = { type: 'boolean', description: '`true`: the answer is an SSE stream (`text/event-stream`).' };

/** A chat or text completion: `object`, `choices` whose entries carry `choice`'s fields, usage. */
function completionObject(object: string, choice: Record<string, SchemaObject>): SchemaObject {
  return {
    type: 'object',
    required: ['object', 'choices'],
    properties: {
      id: { type: 'string' },
      object: { type: 'string', enum: [object] },
      created: { type: 'integer' },
      model: { type: 'string' },
      choices: {
        type: 'array',
        items: {
          type: 'object',
          properties: { index: { type: 'integer' }, ...choice, finish_reason: { type: 'string', nullable: true } },
          additionalProperties: true,
        },
      },
      usage,
    },
    additionalProperties: true,
  };
}

export const INFERENCE_SCHEMAS: Record<string, SchemaObject> = {
  ChatCompletionRequest: {
    type: 'object',
    required: ['model', 'messages'],
    properties: {
      model,
      messages: {
        type: 'array',
        items: {
          type: 'object',
          required: ['role'],
          properties: {
            role: { type: 'string', enum: ['system', 'developer', 'user', 'assistant', 'tool'] },
            content: { oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'object', additionalProperties: true } }], nullable: true },
          },
          additionalProperties: true,
        },
      },
      stream,
      max_tokens: { type: 'integer', minimum: 1 },
      temperature: { type: 'number' },
      tools: { type: 'array', items: { type: 'object', additionalProperties: true }, description: 'Needs a worker with the `tools` capability.' },
      response_format: { type: 'object', additionalProperties: true, description: '`json_object` / `json_schema` need `json_mode`.' },
    },
    additionalProperties: true,
  },
  ChatCompletion: completionObject('chat.completion', {
    message: { type: 'object', properties: { role: { type: 'string' }, content: { type: 'string', nullable: true } }, additionalProperties: true },
  }),
  CompletionRequest: {
    type: 'object',
    required: ['model'],
    properties: {
      model,
      prompt: { oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }] },
      stream,
      max_tokens: { type: 'integer', minimum: 1 },
      temperature: { type: 'number' },
    },
    additionalProperties: true,
  },
  Completion: completionObject('text_completion', { text: { type: 'string' } }),
  ResponseRequest: {
    type: 'object',
    required: ['model'],
    properties: {
      model,
      input: { oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'object', additionalProperties: true } }] },
      instructions: { type: 'string' },
      stream,
      max_output_tokens: { type: 'integer', minimum: 1 },
    },
    additionalProperties: true,
  },
  Response: {
    type: 'object',
    required: ['object', 'output'],
    properties: {
      id: { type: 'string' },
      object: { type: 'string', enum: ['response'] },
      created_at: { type: 'integer' },
      model: { type: 'string' },
      status: { type: 'string' },
      output: { type: 'array', items: { type: 'object', additionalProperties: true } },
      usage: {
        type: 'object',
        properties: { input_tokens: { type: 'integer' }, output_tokens: { type: 'integer' }, total_tokens: { type: 'integer' } },
        additionalProperties: true,
      },
    },
    additionalProperties: true,
  },
  EmbeddingRequest: {
    type: 'object',
    required: ['model', 'input'],
    properties: {
      model,
      input: { oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }, { type: 'array', items: { type: 'integer' } }] },
      encoding_format: { type: 'string', enum: ['float', 'base64'] },
      stream: { type: 'boolean', description: 'Ignored: embeddings are never streamed.' },
    },
    additionalProperties: true,
  },
  EmbeddingList: {
    type: 'object',
    required: ['object', 'data'],
    properties: {
      object: { type: 'string', enum: ['list'] },
      data: {
        type: 'array',
        items: {
          type: 'object',
          properties: {
            object: { type: 'string', enum: ['embedding'] },
            index: { type: 'integer' },
            embedding: { oneOf: [{ type: 'array', items: { type: 'number' } }, { type: 'string' }] },
          },
          additionalProperties: true,
        },
      },
      model: { type: 'string' },
      usage: { type: 'object', properties: { prompt_tokens: { type: 'integer' }, total_tokens: { type: 'integer' } }, additionalProperties: true },
    },
    additionalProperties: true,
  },
  MessageRequest: {
    type: 'object',
    required: ['model', 'max_tokens', 'messages'],
    properties: {
      model,
      max_tokens: { type: 'integer', minimum: 1 },
      system: { oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'object', additionalProperties: true } }] },
      messages: {
        type: 'array',
        items: {
          type: 'object',
          required: ['role', 'content'],
          properties: {
            role: { type: 'string', enum: ['user', 'assistant'] },
            content: { oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'object', additionalProperties: true } }] },
          },
          additionalProperties: true,
        },
      },
      stream,
      tools: { type: 'array', items: { type: 'object', additionalProperties: true } },
    },
    additionalProperties: true,
  },
  CountTokensRequest: {
    type: 'object',
    required: ['model', 'messages'],
    properties: {
      model,
      system: { oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'object', additionalProperties: true } }] },
      messages: { type: 'array', items: { type: 'object', additionalProperties: true } },
      tools: { type: 'array', items: { type: 'object', additionalProperties: true } },
    },
    additionalProperties: true,
  },
  MessageTokensCount: {
    type: 'object',
    required: ['input_tokens'],
    properties: { input_tokens: { type: 'integer', minimum: 0 } },
    additionalProperties: true,
  },
  Message: {
    type: 'object',
    required: ['type', 'content'],
    properties: {
      id: { type: 'string' },
      type: { type: 'string', enum: ['message'] },
      role: { type: 'string', enum: ['assistant'] },
      model: { type: 'string' },
      content: {
        type: 'array',
        items: { type: 'object', required: ['type'], properties: { type: { type: 'string' }, text: { type: 'string' } }, additionalProperties: true },
      },
      stop_reason: { type: 'string', nullable: true },
      usage: { type: 'object', properties: { input_tokens: { type: 'integer' }, output_tokens: { type: 'integer' } }, additionalProperties: true },
    },
    additionalProperties: true,
  },
  ModelList: {
    type: 'object',
    required: ['object', 'data'],
    properties: {
      object: { type: 'string', enum: ['list'] },
      data: {
        type: 'array',
        items: {
          type: 'object',
          required: ['id', 'object', 'created', 'owned_by'],
          properties: {
            id: { type: 'string' },
            object: { type: 'string', enum: ['model'] },
            created: { type: 'integer', description: 'Unix seconds.' },
            owned_by: { type: 'string', description: 'The provider (pool).' },
          },
        },
      },
    },
  },
};
