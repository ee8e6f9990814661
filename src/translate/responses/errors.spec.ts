import OpenAI from 'openai';
import { sdkAnsweredWith } from '../../../test/translate/support/responses-sdk-harness';
import { responsesCodec } from './codec';

/** What the openai SDK throws for the codec's translation of a backend error answer. */
async function sdkErrorFor(status: number, backendBody: string): Promise<InstanceType<typeof OpenAI.APIError>> {
  const body = JSON.stringify(responsesCodec.errorFromChat(status, backendBody));
  try {
    await sdkAnsweredWith(status, body, 'application/json').responses.create({ model: 'm', input: 'x' });
  } catch (error) {
    if (error instanceof OpenAI.APIError) return error;
    throw error;
  }
  throw new Error('the SDK did not throw');
}

describe('responses codec: backend errors', () => {
  it('keeps an OpenAI-shaped error body as the backend sent it', async () => {
    const backend = {
      error: { message: 'This model maximum context length is 4096 tokens', type: 'invalid_request_error', code: 'context_length_exceeded', param: 'messages' },
    };
    expect(responsesCodec.errorFromChat(400, JSON.stringify(backend))).toEqual(backend);
    const error = await sdkErrorFor(400, JSON.stringify(backend));
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error.message).toContain('maximum context length is 4096');
    expect(error.code).toBe('context_length_exceeded');
    expect(error.param).toBe('messages');
  });

  it('nests vLLM’s flat error shape', async () => {
    const backend = { object: 'error', message: 'max_tokens must be at least 1', type: 'BadRequestError', param: null, code: 400 };
    expect(responsesCodec.errorFromChat(400, JSON.stringify(backend))).toEqual({
      error: { message: 'max_tokens must be at least 1', type: 'BadRequestError', param: null, code: 400 },
    });
    expect((await sdkErrorFor(400, JSON.stringify(backend))).message).toContain('max_tokens must be at least 1');
  });

  it('quotes a body that is not JSON (bounded) and types the error by status', async () => {
    expect(responsesCodec.errorFromChat(502, '<html>Bad Gateway</html>')).toEqual({
      error: { message: 'The backend answered with status 502: <html>Bad Gateway</html>', type: 'server_error', code: null, param: null },
    });
    expect((responsesCodec.errorFromChat(500, 'x'.repeat(10_000)).error as { message: string }).message.length).toBeLessThan(600);
    expect(await sdkErrorFor(429, '')).toBeInstanceOf(OpenAI.RateLimitError);
    expect(await sdkErrorFor(503, 'overloaded')).toBeInstanceOf(OpenAI.InternalServerError);
  });
});
