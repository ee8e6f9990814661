import type { MessageCountTokensParams } from '@anthropic-ai/sdk/resources/messages';
import type { ProbeAnswer } from '../worker/support/fake-backend';
import { AnthropicRig, CLIENT_MODEL, startAnthropicRig } from './support/anthropic-rig';

/**
 * `messages.countTokens` on a fleet whose only worker serves chat completions: counted by the
 * backend's tokenizer (`/tokenize`) when the worker found one, else estimated by the gateway and
 * marked `x-switchboard-estimate: true`.
 */
describe('Anthropic SDK countTokens through translation', () => {
  let rig: AnthropicRig | undefined;

  afterEach(async () => {
    await rig?.close();
    rig = undefined;
  });

  const params: MessageCountTokensParams = {
    model: CLIENT_MODEL,
    system: 'Be brief.',
    messages: [{ role: 'user', content: 'How many tokens is this?' }],
    tools: [{ name: 'lookup', description: 'Look up', input_schema: { type: 'object', properties: { q: { type: 'string' } } } }],
  };

  /** A tokenizer route: `{}` (the worker's probe) is refused like a real server's validation, text is counted. */
  function tokenizer(answer: (text: string) => unknown): (req: { body: string }) => ProbeAnswer {
    return ({ body }) => {
      const parsed = JSON.parse(body) as { content?: string; prompt?: string };
      if (parsed.content === undefined) return { status: 400, json: { error: { message: "'content' is required" } } };
      return { status: 200, json: answer(parsed.content) };
    };
  }

  it("counts with the backend's /tokenize, llama-server style (tokens) and vLLM style (count)", async () => {
    let style: 'llama' | 'vllm' = 'llama';
    rig = await startAnthropicRig({
      tokenize: tokenizer((text) => (style === 'llama' ? { tokens: text.split(/\s+/).map((_, i) => i) } : { count: 1234, tokens: [] })),
    });
    const { data, response } = await rig.client.messages.countTokens(params).withResponse();
    expect(response.status).toBe(200);
    expect(response.headers.get('x-switchboard-estimate')).toBeNull();

    const sent = rig.backend.requests.filter((r) => r.path === '/tokenize' && r.body.trim() !== '{}');
    expect(sent).toHaveLength(1);
    const body = JSON.parse(sent[0].body) as Record<string, unknown>;
    const text = body.content as string;
    expect(body).toMatchObject({ prompt: text, add_special: true });
    expect(text).toContain('Be brief.');
    expect(text).toContain('user: How many tokens is this?');
    expect(text).toContain('"name":"lookup"');
    expect(data).toEqual({ input_tokens: text.split(/\s+/).length });

    style = 'vllm';
    expect(await rig.client.messages.countTokens(params)).toEqual({ input_tokens: 1234 });
  });

  it('answers with the estimate, marked, when no worker has a tokenizer', async () => {
    rig = await startAnthropicRig();
    // 'user: ' and 398 characters: 404 characters, a quarter rounded up.
    const { data, response } = await rig.client.messages
      .countTokens({ model: CLIENT_MODEL, messages: [{ role: 'user', content: 'x'.repeat(398) }] })
      .withResponse();
    expect(response.headers.get('x-switchboard-estimate')).toBe('true');
    expect(data).toEqual({ input_tokens: 101 });
    // Only the worker's probe reached /tokenize (and was told the route is missing).
    expect(rig.backend.requests.filter((r) => r.path === '/tokenize').map((r) => r.body)).toEqual(['{}']);
  });
});
