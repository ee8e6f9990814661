import fc from 'fast-check';
import { sdkAnsweredWith } from '../../../test/translate/support/responses-sdk-harness';
import type { AnswerContext, Json } from '../dialect-codec';
import { createResponsesCodec } from './codec';

/** Ids numbered per prefix, so whole answers can be compared. */
function counting() {
  const seen = new Map<string, number>();
  return {
    newId: (prefix: string) => {
      const n = (seen.get(prefix) ?? 0) + 1;
      seen.set(prefix, n);
      return `${prefix}${n}`;
    },
    nowSecs: () => 1_700_000_999,
  };
}

const request: Json = {
  model: 'my-model',
  instructions: 'Be brief.',
  input: 'Weather?',
  tools: [
    { type: 'function', name: 'weather', parameters: { type: 'object', properties: {} } },
    { type: 'namespace', name: 'mcp__docs', description: 'Docs', tools: [{ type: 'function', name: 'search_docs' }] },
  ],
  temperature: 0.5,
  max_output_tokens: 100,
  metadata: { team: 'a' },
  text: { format: { type: 'text' } },
};
const ctx: AnswerContext = { model: 'my-model', request };

function completion(message: Json, finish = 'stop', usage: Json | undefined = { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 }): Json {
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 1_700_000_000,
    model: 'served',
    choices: [{ index: 0, message, finish_reason: finish }],
    usage,
  };
}

describe('responses codec: whole answers', () => {
  it('gives the response object, echoing the request’s settings', () => {
    const codec = createResponsesCodec(counting());
    const answer = codec.fromChat(completion({ role: 'assistant', content: 'Sunny.' }), ctx);
    expect(answer).toEqual({
      id: 'resp_1',
      object: 'response',
      created_at: 1_700_000_000,
      status: 'completed',
      background: false,
      error: null,
      incomplete_details: null,
      instructions: 'Be brief.',
      max_output_tokens: 100,
      model: 'my-model',
      output: [
        {
          id: 'msg_1',
          type: 'message',
          status: 'completed',
          role: 'assistant',
          content: [{ type: 'output_text', text: 'Sunny.', annotations: [], logprobs: [] }],
        },
      ],
      parallel_tool_calls: true,
      previous_response_id: null,
      reasoning: { effort: null, summary: null },
      store: false,
      temperature: 0.5,
      text: { format: { type: 'text' } },
      tool_choice: 'auto',
      tools: request.tools,
      top_p: null,
      truncation: 'disabled',
      metadata: { team: 'a' },
      usage: {
        input_tokens: 12,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens: 5,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: 17,
      },
    });
  });

  it('is read by the openai SDK: output_text, reasoning, calls with their ids and namespaces, usage details', async () => {
    const codec = createResponsesCodec(counting());
    const answer = codec.fromChat(
      completion(
        {
          role: 'assistant',
          content: 'Looking.',
          reasoning_content: 'The user wants weather.',
          tool_calls: [
            { id: 'call_w', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } },
            { type: 'function', function: { name: 'search_docs', arguments: '{}' } },
          ],
        },
        'tool_calls',
        { prompt_tokens: 30, completion_tokens: 9, prompt_tokens_details: { cached_tokens: 16 }, completion_tokens_details: { reasoning_tokens: 4 } },
      ),
      ctx,
    );
    const response = await sdkAnsweredWith(200, JSON.stringify(answer), 'application/json').responses.create({ model: 'my-model', input: 'Weather?' });
    expect(response.output_text).toBe('Looking.');
    expect(response.output.map((item) => item.type)).toEqual(['reasoning', 'message', 'function_call', 'function_call']);
    expect(response.output[0]).toEqual({ id: 'rs_1', type: 'reasoning', summary: [{ type: 'summary_text', text: 'The user wants weather.' }] });
    expect(response.output[2]).toMatchObject({ type: 'function_call', id: 'fc_1', call_id: 'call_w', name: 'weather', arguments: '{"city":"Paris"}' });
    expect(response.output[2]).not.toHaveProperty('namespace');
    // A call without an id gets one, and a function from a namespace tool names its namespace again.
    expect(response.output[3]).toMatchObject({ call_id: 'call_1', name: 'search_docs', namespace: 'mcp__docs' });
    expect(response.usage).toEqual({
      input_tokens: 30,
      input_tokens_details: { cached_tokens: 16 },
      output_tokens: 9,
      output_tokens_details: { reasoning_tokens: 4 },
      total_tokens: 39,
    });
  });

  it('says incomplete, and why, when the backend stopped at the token limit', () => {
    const answer = createResponsesCodec(counting()).fromChat(completion({ role: 'assistant', content: 'Once upon' }, 'length'), ctx);
    expect(answer.status).toBe('incomplete');
    expect(answer.incomplete_details).toEqual({ reason: 'max_output_tokens' });
    expect((answer.output as Json[])[0].status).toBe('incomplete');
  });

  it('fails, with a message, when the backend’s answer has no message', () => {
    const answer = createResponsesCodec(counting()).fromChat({ id: 'x', choices: [] }, ctx);
    expect(answer.status).toBe('failed');
    expect(answer.error).toEqual({ code: 'server_error', message: expect.stringContaining('without a message') });
    expect(answer.created_at).toBe(1_700_000_999);
  });

  it('never throws, whatever the backend answered', () => {
    const codec = createResponsesCodec();
    fc.assert(
      fc.property(fc.jsonValue(), fc.jsonValue(), (message, usage) => {
        const answer = codec.fromChat({ choices: [{ message, finish_reason: 'stop' }], usage }, { model: 'm', request: { tools: message } });
        expect(answer.object).toBe('response');
      }),
      { numRuns: 300 },
    );
  });
});
