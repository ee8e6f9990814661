import type { Json } from '../dialect-codec';
import { anthropicCodec } from './anthropic.codec';

const ctx = (request: Json = {}) => ({ model: 'claude-sonnet-4-5', request });

function chat(message: Json, finish_reason: string | null = 'stop', extra: Json = {}): Json {
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    model: 'qwen3-8b',
    choices: [{ index: 0, message: { role: 'assistant', ...message }, finish_reason, ...extra }],
    usage: { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 },
  };
}

describe('anthropicCodec.fromChat', () => {
  it('answers a Message naming the client model, with text, end_turn and usage', () => {
    const answer = anthropicCodec.fromChat(chat({ content: 'Hello!' }), ctx());
    expect(answer).toEqual({
      id: expect.stringMatching(/^msg_[A-Za-z0-9_-]+$/),
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-5',
      content: [{ type: 'text', text: 'Hello!' }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: 12, output_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
    });
  });

  it('turns tool calls into tool_use blocks, keeping the backend id, and stops with tool_use', () => {
    const answer = anthropicCodec.fromChat(
      chat(
        {
          content: 'Let me check.',
          tool_calls: [
            { id: 'call_abc', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } },
            { type: 'function', function: { name: 'clock', arguments: 'not json' } },
            { type: 'function', function: { name: 'list', arguments: '[1,2]' } },
          ],
        },
        'tool_calls',
      ),
      ctx(),
    );
    expect(answer.stop_reason).toBe('tool_use');
    expect(answer.content).toEqual([
      { type: 'text', text: 'Let me check.' },
      { type: 'tool_use', id: 'call_abc', name: 'weather', input: { city: 'Paris' } },
      { type: 'tool_use', id: expect.stringMatching(/^toolu_/), name: 'clock', input: {} },
      { type: 'tool_use', id: expect.stringMatching(/^toolu_/), name: 'list', input: {} },
    ]);
    // llama-server sometimes finishes a tool call with "stop": the content still says a tool is wanted.
    expect(anthropicCodec.fromChat(chat({ tool_calls: [{ id: 'c', function: { name: 'f', arguments: '{}' } }] }, 'stop'), ctx()).stop_reason).toBe('tool_use');
  });

  it('maps length to max_tokens and content_filter to refusal', () => {
    expect(anthropicCodec.fromChat(chat({ content: 'trunc' }, 'length'), ctx()).stop_reason).toBe('max_tokens');
    expect(anthropicCodec.fromChat(chat({ content: '' }, 'content_filter'), ctx()).stop_reason).toBe('refusal');
  });

  it('names the stop sequence the backend reported or the text ended on', () => {
    const request = { stop_sequences: ['###', 'END'] };
    const vllm = anthropicCodec.fromChat(chat({ content: 'a' }, 'stop', { stop_reason: 'END' }), ctx(request));
    expect(vllm).toMatchObject({ stop_reason: 'stop_sequence', stop_sequence: 'END' });
    const llama = anthropicCodec.fromChat({ ...chat({ content: 'a' }), stopping_word: '###' }, ctx(request));
    expect(llama).toMatchObject({ stop_reason: 'stop_sequence', stop_sequence: '###' });
    const kept = anthropicCodec.fromChat(chat({ content: 'done END' }), ctx(request));
    expect(kept).toMatchObject({ stop_reason: 'stop_sequence', stop_sequence: 'END' });
    // An EOS stop (vLLM reports a token id) or a word the client never asked for is a plain end_turn.
    expect(anthropicCodec.fromChat(chat({ content: 'a' }, 'stop', { stop_reason: 151645 }), ctx(request)).stop_reason).toBe('end_turn');
    expect(anthropicCodec.fromChat(chat({ content: 'a' }, 'stop', { stop_reason: 'OTHER' }), ctx(request)).stop_reason).toBe('end_turn');
  });

  it('gives backend reasoning as a thinking block only when the client asked for thinking', () => {
    const answer = chat({ content: '42', reasoning_content: 'think hard' });
    expect(anthropicCodec.fromChat(answer, ctx({ thinking: { type: 'enabled', budget_tokens: 2000 } })).content).toEqual([
      { type: 'thinking', thinking: 'think hard', signature: '' },
      { type: 'text', text: '42' },
    ]);
    expect(anthropicCodec.fromChat(chat({ content: '42', reasoning: 'vllm style' }), ctx({ thinking: { type: 'adaptive' } })).content).toContainEqual({
      type: 'thinking',
      thinking: 'vllm style',
      signature: '',
    });
    expect(anthropicCodec.fromChat(answer, ctx()).content).toEqual([{ type: 'text', text: '42' }]);
  });

  it('never throws on a malformed answer: empty content, zero usage', () => {
    for (const bad of [
      {},
      { choices: 'x' },
      { choices: [null] },
      { choices: [{ message: { content: 5, tool_calls: [1, {}] } }], usage: { prompt_tokens: -3 } },
    ]) {
      const answer = anthropicCodec.fromChat(bad, ctx());
      expect(answer).toMatchObject({ type: 'message', content: [], stop_reason: 'end_turn', usage: { input_tokens: 0, output_tokens: 0 } });
    }
    expect(anthropicCodec.fromChat(null as unknown as Json, ctx()).content).toEqual([]);
  });
});

describe('anthropicCodec.errorFromChat', () => {
  it('answers Anthropic error shapes with the type the status calls for', () => {
    const types: [number, string][] = [
      [400, 'invalid_request_error'],
      [401, 'authentication_error'],
      [403, 'permission_error'],
      [404, 'not_found_error'],
      [413, 'request_too_large'],
      [422, 'invalid_request_error'],
      [429, 'rate_limit_error'],
      [500, 'api_error'],
      [502, 'api_error'],
      [503, 'overloaded_error'],
      [504, 'timeout_error'],
      [529, 'overloaded_error'],
    ];
    for (const [status, type] of types) {
      expect(anthropicCodec.errorFromChat(status, '{"error":{"message":"m"}}')).toEqual({ type: 'error', error: { type, message: 'm' } });
    }
  });

  it("keeps the backend's message, whatever shape it came in, bounded", () => {
    expect(anthropicCodec.errorFromChat(400, '{"error":{"code":400,"message":"context too long","type":"invalid_request_error"}}')).toMatchObject({
      error: { message: 'context too long' },
    });
    expect(anthropicCodec.errorFromChat(400, '{"object":"error","message":"vllm says no"}')).toMatchObject({ error: { message: 'vllm says no' } });
    expect(anthropicCodec.errorFromChat(404, '{"detail":"Not Found"}')).toMatchObject({ error: { message: 'Not Found' } });
    expect(anthropicCodec.errorFromChat(500, 'plain text failure\n')).toMatchObject({ error: { message: 'plain text failure' } });
    expect(anthropicCodec.errorFromChat(502, '')).toMatchObject({ error: { type: 'api_error', message: 'The backend answered HTTP 502' } });
    expect(anthropicCodec.errorFromChat(500, '{"status":"bad"}')).toMatchObject({ error: { message: 'The backend answered HTTP 500' } });
    const long = anthropicCodec.errorFromChat(500, 'x'.repeat(5000)) as { error: { message: string } };
    expect(long.error.message.length).toBeLessThanOrEqual(1001);
  });
});
