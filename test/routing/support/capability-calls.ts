import { TestGateway } from '../../support/gateway';
import { ScriptedWorker } from '../../support/scripted-worker';
import { chat, post, RawResponse } from '../../support/http';
import { OK_BODY } from '../../support/routing';

// The requests capabilities.e2e-spec.ts sends: one per capability and dialect, and how they are sent.

export type Dialect = 'chat' | 'responses' | 'messages';
export interface Call {
  path: string;
  body: Record<string, unknown>;
}

export const IMAGE_PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=';
export const WEATHER_SCHEMA = { type: 'object', properties: { city: { type: 'string' } } };

/** A request that needs vision, in each dialect's own shape. */
export const visionCall: Record<Dialect, (model: string) => Call> = {
  chat: (model) => ({
    path: '/v1/chat/completions',
    body: {
      model,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is in this picture?' },
            { type: 'image_url', image_url: { url: `data:image/png;base64,${IMAGE_PNG}` } },
          ],
        },
      ],
    },
  }),
  responses: (model) => ({
    path: '/v1/responses',
    body: {
      model,
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'What is in this picture?' },
            { type: 'input_image', image_url: `data:image/png;base64,${IMAGE_PNG}` },
          ],
        },
      ],
    },
  }),
  messages: (model) => ({
    path: '/v1/messages',
    body: {
      model,
      max_tokens: 16,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is in this picture?' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: IMAGE_PNG } },
          ],
        },
      ],
    },
  }),
};

/** A request that needs tools, in each dialect's own shape. */
export const toolsCall: Record<Dialect, (model: string) => Call> = {
  chat: (model) => ({
    path: '/v1/chat/completions',
    body: chat(model, { tools: [{ type: 'function', function: { name: 'get_weather', parameters: WEATHER_SCHEMA } }] }),
  }),
  responses: (model) => ({
    path: '/v1/responses',
    body: { model, input: 'Weather in Oslo?', tools: [{ type: 'function', name: 'get_weather', parameters: WEATHER_SCHEMA }] },
  }),
  messages: (model) => ({
    path: '/v1/messages',
    body: {
      model,
      max_tokens: 16,
      messages: [{ role: 'user', content: 'Weather in Oslo?' }],
      tools: [{ name: 'get_weather', input_schema: WEATHER_SCHEMA }],
    },
  }),
};

/** A request that needs JSON mode, where the dialect has one. */
export const jsonCalls: Array<[string, (model: string) => Call]> = [
  ['chat response_format json_object', (model) => ({ path: '/v1/chat/completions', body: chat(model, { response_format: { type: 'json_object' } }) })],
  [
    'chat response_format json_schema',
    (model) => ({
      path: '/v1/chat/completions',
      body: chat(model, { response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object' } } } }),
    }),
  ],
  [
    'completions response_format json_object',
    (model) => ({ path: '/v1/completions', body: { model, prompt: 'Say {}', response_format: { type: 'json_object' } } }),
  ],
  [
    'responses text.format json_schema',
    (model) => ({
      path: '/v1/responses',
      body: { model, input: 'Say {}', text: { format: { type: 'json_schema', name: 'x', schema: { type: 'object' } } } },
    }),
  ],
  ['responses text.format json_object', (model) => ({ path: '/v1/responses', body: { model, input: 'Say {}', text: { format: { type: 'json_object' } } } })],
];

export const DIALECTS: Dialect[] = ['chat', 'responses', 'messages'];

export async function send(gw: TestGateway, call: Call, headers: Record<string, string> = {}): Promise<RawResponse> {
  return post(gw.url, call.path, call.body, headers);
}

/**
 * Sends `call` and lets whichever of `workers` receives it answer 200; returns that worker.
 * Fails if none of them receives it.
 */
export async function served(gw: TestGateway, call: Call, workers: ScriptedWorker[]): Promise<ScriptedWorker> {
  const pending = send(gw, call);
  const got = await ScriptedWorker.firstOf(workers, 'request');
  got.worker.complete(got.frame.request_id, OK_BODY);
  const res = await pending;
  expect(res.status).toBe(200);
  return got.worker;
}
