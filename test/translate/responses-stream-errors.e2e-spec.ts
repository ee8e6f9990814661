import OpenAI from 'openai';
import { cutBytes } from '../worker/support/fake-backend';
import { ResponsesEnv, startResponsesEnv } from './support/responses-env';

/**
 * Backend errors on a streamed Responses request translated to chat completions (the worker daemon
 * negotiates `response_start`): an error status before any event is one whole OpenAI error; an error
 * chunk in the middle of the stream ends it with `response.failed`, as Codex expects.
 */
describe('Responses API streamed through a chat-only worker: backend errors', () => {
  let env: ResponsesEnv;

  beforeAll(async () => {
    env = await startResponsesEnv({ chatOnly: true });
  });

  afterAll(async () => {
    await env?.close();
  });

  it('answers a backend 400 to a streamed request as one whole OpenAI error (the SDK’s BadRequestError)', async () => {
    env.backend.enqueue({
      kind: 'status',
      status: 400,
      body: JSON.stringify({ object: 'error', message: "This model's maximum context length is 4096 tokens", type: 'BadRequestError', param: null, code: 400 }),
    });
    const res = await fetch(`${env.gw.url}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'llama3', input: 'a very long prompt', stream: true }),
    });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toContain('application/json');
    expect(res.headers.get('x-switchboard-translated')).toBe('openai-responses');
    const body = (await res.json()) as { error: { message: string } };
    expect(body.error.message).toContain('maximum context length');

    env.backend.enqueue({
      kind: 'status',
      status: 400,
      body: JSON.stringify({ error: { message: 'prompt is too long', type: 'invalid_request_error', code: 400 } }),
    });
    const error = await env.openai.responses.create({ model: 'llama3', input: 'again', stream: true }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).message).toContain('prompt is too long');
  });

  it('ends a stream whose backend reports an error midway with response.failed carrying it', async () => {
    const chunk = (delta: Record<string, unknown>) =>
      `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'llama3', choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`;
    const sse =
      chunk({ role: 'assistant', content: 'Par' }) +
      chunk({ content: 'tial' }) +
      `data: ${JSON.stringify({ error: { message: 'CUDA out of memory', code: 'oom' } })}\n\n`;
    env.backend.enqueue({ kind: 'raw-stream', pieces: cutBytes(sse, 11), delayMs: 0, then: 'end' });
    const types: string[] = [];
    let failed: OpenAI.Responses.ResponseFailedEvent | undefined;
    for await (const event of await env.openai.responses.create({ model: 'llama3', input: 'hi', stream: true })) {
      types.push(event.type);
      if (event.type === 'response.failed') failed = event;
    }
    expect(types.at(-1)).toBe('response.failed');
    expect(types).toContain('response.output_text.done');
    expect(failed?.response.error).toEqual({ code: 'oom', message: 'CUDA out of memory' });
    expect(failed?.response.output).toMatchObject([{ type: 'message', content: [{ type: 'output_text', text: 'Partial' }] }]);
  });
});
