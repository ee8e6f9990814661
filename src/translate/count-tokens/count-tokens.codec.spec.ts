import { GatewayError } from '../../common/gateway-error';
import type { ChatRequest, Json } from '../dialect-codec';
import { countTokensCodec, estimateInputTokens } from './count-tokens.codec';

const body: Json = {
  model: 'claude-haiku-4-5',
  system: [{ type: 'text', text: 'Be brief.' }],
  messages: [
    { role: 'user', content: 'What is 2+2?' },
    { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'calc', input: { expr: '2+2' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: '4' }] },
  ],
  tools: [{ name: 'calc', description: 'Evaluate', input_schema: { type: 'object', properties: { expr: { type: 'string' } } } }],
  thinking: { type: 'enabled', budget_tokens: 1024 },
};

describe('countTokensCodec', () => {
  it("sends one rendered text to the backend's /tokenize, in the fields llama-server and vLLM read", () => {
    expect(countTokensCodec.kind).toBe('count-tokens');
    expect(countTokensCodec.endpoint).toBe('/tokenize');
    const { body: tokenize, dropped } = countTokensCodec.toChat(body, false) as ChatRequest;
    const text = [
      'Be brief.',
      'user: What is 2+2?',
      'assistant: calc {"expr":"2+2"}',
      'user: 4',
      '{"name":"calc","description":"Evaluate","input_schema":{"type":"object","properties":{"expr":{"type":"string"}}}}',
    ].join('\n');
    expect(tokenize).toEqual({ model: 'claude-haiku-4-5', content: text, prompt: text, add_special: true });
    expect(dropped).toEqual(['thinking']);
  });

  it('reads vLLM count and llama-server tokens', () => {
    expect(countTokensCodec.fromChat({ count: 17, tokens: [1, 2], max_model_len: 4096 }, { model: 'm', request: {} })).toEqual({ input_tokens: 17 });
    expect(countTokensCodec.fromChat({ tokens: [5, 6, 7] }, { model: 'm', request: {} })).toEqual({ input_tokens: 3 });
    expect(countTokensCodec.fromChat({ weird: true }, { model: 'm', request: {} })).toEqual({ input_tokens: 0 });
  });

  it('refuses a body without messages and answers backend errors in Anthropic shape', () => {
    expect(countTokensCodec.toChat({ model: 'm' }, false)).toBeInstanceOf(GatewayError);
    expect(countTokensCodec.errorFromChat(404, '{"error":{"message":"no tokenizer"}}')).toEqual({
      type: 'error',
      error: { type: 'not_found_error', message: 'no tokenizer' },
    });
  });
});

describe('estimateInputTokens', () => {
  it('is a quarter of the rendered characters, at least 1', () => {
    const text = (countTokensCodec.toChat(body, false) as ChatRequest).body.content as string;
    expect(estimateInputTokens(body)).toBe(Math.ceil(text.length / 4));
    expect(estimateInputTokens({ messages: [{ role: 'user', content: 'x'.repeat(400) }] })).toBe(102);
    expect(estimateInputTokens({})).toBe(1);
    expect(estimateInputTokens({ messages: 'nope', system: 3, tools: [null] })).toBe(1);
  });
});
