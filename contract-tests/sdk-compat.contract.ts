/**
 * Contract: "OpenAI-style and Anthropic-style compatibility" — ordinary clients (the official
 * SDKs) work unchanged against the gateway, streaming included, and see errors in their dialect.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { useScope } from './support/scope';
import { target } from './support/target';
import { Frame, ScriptedWorker } from './support/worker';
import { uniqueModel } from './support/util';

function openai(): OpenAI {
  return new OpenAI({ baseURL: `${target().url}/v1`, apiKey: 'sk-contract-openai', organization: 'org-contract', maxRetries: 0 });
}

function anthropic(): Anthropic {
  return new Anthropic({ baseURL: target().url, apiKey: 'sk-ant-contract', maxRetries: 0 });
}

function chatCompletion(model: string, content: string) {
  return {
    id: 'chatcmpl-contract',
    object: 'chat.completion',
    created: 1_700_000_000,
    model,
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop', logprobs: null }],
    usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
  };
}

function chatChunk(model: string, delta: Record<string, unknown>, finish: string | null = null): string {
  return `data: ${JSON.stringify({ id: 'chatcmpl-contract', object: 'chat.completion.chunk', created: 1_700_000_000, model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
}

function anthropicMessage(model: string, text: string) {
  return {
    id: 'msg_contract',
    type: 'message',
    role: 'assistant',
    model,
    content: [{ type: 'text', text }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: 3, output_tokens: 2 },
  };
}

function anthropicEvents(model: string, parts: string[]): string[] {
  const ev = (type: string, data: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
  return [
    ev('message_start', {
      message: {
        id: 'msg_contract',
        type: 'message',
        role: 'assistant',
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 3, output_tokens: 0 },
      },
    }),
    ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
    ...parts.map((text) => ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text } })),
    ev('content_block_stop', { index: 0 }),
    ev('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: parts.length } }),
    ev('message_stop', {}),
  ];
}

function streamChunksSlowly(w: ScriptedWorker, req: Frame, chunks: string[]): void {
  chunks.forEach((c, i) => setTimeout(() => w.chunk(req.request_id, c), 5 * i));
  setTimeout(() => w.complete(req.request_id, { status: 200 }), 5 * chunks.length + 5);
}

describe('OpenAI SDK', () => {
  const scope = useScope();

  test('chat.completions.create (non-streaming) round-trips through a worker', async () => {
    const model = uniqueModel('oai');
    const w = await scope.worker({ models: [model] });
    const pending = openai().chat.completions.create({ model, messages: [{ role: 'user', content: 'Say hi' }] });
    pending.catch(() => undefined);
    const req = await w.nextRequest();
    expect(req.endpoint_path).toBe('/v1/chat/completions');
    expect(req.is_streaming).toBe(false);
    expect(req.headers.authorization).toBe('Bearer sk-contract-openai');
    expect(req.headers['openai-organization']).toBe('org-contract');
    w.respondJson(req.request_id, chatCompletion(model, 'Hi there'));
    const res = await pending;
    expect(res.choices[0].message.content).toBe('Hi there');
    expect(res.usage?.total_tokens).toBe(5);
  });

  test('chat.completions.create with stream:true yields every SSE delta and stops at [DONE]', async () => {
    const model = uniqueModel('oaistream');
    const w = await scope.worker({ models: [model] });
    const stream = await Promise.all([
      openai().chat.completions.create({ model, messages: [{ role: 'user', content: 'Count' }], stream: true }),
      w.nextRequest().then((req) => {
        expect(req.is_streaming).toBe(true);
        streamChunksSlowly(w, req, [
          chatChunk(model, { role: 'assistant', content: '' }),
          chatChunk(model, { content: 'one ' }),
          chatChunk(model, { content: 'two ' }),
          chatChunk(model, { content: 'three' }),
          chatChunk(model, {}, 'stop'),
          'data: [DONE]\n\n',
        ]);
      }),
    ]).then(([s]) => s);
    let text = '';
    let finish: string | null = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(text).toBe('one two three');
    expect(finish).toBe('stop');
  });

  test('gateway errors surface as typed SDK errors (404 model_not_found)', async () => {
    const model = uniqueModel('oai404');
    const err = await openai()
      .chat.completions.create({ model, messages: [{ role: 'user', content: 'x' }] })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    const e = err as InstanceType<typeof OpenAI.NotFoundError>;
    expect(e.status).toBe(404);
    expect(e.code).toBe('model_not_found');
    expect(e.message).toContain(`Model '${model}' not found`);
  });
});

describe('Anthropic SDK (/v1/messages)', () => {
  const scope = useScope();

  test('messages.create (non-streaming) round-trips through a worker', async () => {
    const model = uniqueModel('ant');
    const w = await scope.worker({ models: [model] });
    const pending = anthropic().messages.create({ model, max_tokens: 16, messages: [{ role: 'user', content: 'Say hi' }] });
    pending.catch(() => undefined);
    const req = await w.nextRequest();
    expect(req.endpoint_path).toBe('/v1/messages');
    expect(req.is_streaming).toBe(false);
    // Whichever way this SDK version sends the key (x-api-key or bearer), the worker gets it.
    expect([req.headers['x-api-key'], req.headers.authorization]).toContainEqual(expect.stringContaining('sk-ant-contract'));
    expect(typeof req.headers['anthropic-version']).toBe('string');
    w.respondJson(req.request_id, anthropicMessage(model, 'Hi there'));
    const msg = await pending;
    expect(msg.content).toEqual([{ type: 'text', text: 'Hi there' }]);
    expect(msg.stop_reason).toBe('end_turn');
  });

  test('messages.stream yields the streamed text and the final message', async () => {
    const model = uniqueModel('antstream');
    const w = await scope.worker({ models: [model] });
    const stream = anthropic().messages.stream({ model, max_tokens: 16, messages: [{ role: 'user', content: 'Count' }] });
    stream.on('error', () => undefined);
    const req = await w.nextRequest();
    expect(req.is_streaming).toBe(true);
    streamChunksSlowly(w, req, anthropicEvents(model, ['one ', 'two ', 'three']));
    const deltas: string[] = [];
    stream.on('text', (t) => deltas.push(t));
    const text = await stream.finalText();
    expect(text).toBe('one two three');
    expect(deltas).toEqual(['one ', 'two ', 'three']);
    expect((await stream.finalMessage()).stop_reason).toBe('end_turn');
  });

  test('gateway errors reach the Anthropic SDK in the Anthropic dialect (404 not_found_error)', async () => {
    const model = uniqueModel('ant404');
    const err = await anthropic()
      .messages.create({ model, max_tokens: 8, messages: [{ role: 'user', content: 'x' }] })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(Anthropic.NotFoundError);
    const e = err as InstanceType<typeof Anthropic.NotFoundError>;
    expect(e.status).toBe(404);
    expect(e.error).toEqual(
      expect.objectContaining({ type: 'error', error: expect.objectContaining({ type: 'not_found_error', code: 'model_not_found', retriable: false }) }),
    );
  });
});
