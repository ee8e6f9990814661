import { eventsOf, sdkAnsweredWith } from '../../../test/translate/support/responses-sdk-harness';
import type { AnswerContext, Json } from '../dialect-codec';
import { createResponsesCodec } from './codec';

function counting() {
  const seen = new Map<string, number>();
  return {
    newId: (prefix: string) => {
      const n = (seen.get(prefix) ?? 0) + 1;
      seen.set(prefix, n);
      return `${prefix}${n}`;
    },
    nowSecs: () => 1,
  };
}

/** Codex's freeform `apply_patch` beside an ordinary function tool. */
const request: Json = {
  model: 'gpt-5-codex',
  input: 'patch it',
  tools: [
    { type: 'custom', name: 'apply_patch', description: 'Apply a patch', format: { type: 'grammar', syntax: 'lark', definition: 'start: ...' } },
    { type: 'function', name: 'shell', parameters: { type: 'object', properties: {} } },
  ],
};
const ctx: AnswerContext = { model: 'gpt-5-codex', request };
const PATCH = '*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch';

const data = (chunk: Json | string): string => `data: ${typeof chunk === 'string' ? chunk : JSON.stringify(chunk)}\n\n`;
const delta = (d: Json, finish_reason: string | null = null): string => data({ created: 1, choices: [{ index: 0, delta: d, finish_reason }] });

describe('responses codec: custom (freeform) tools', () => {
  it('answers a call of a custom tool as a custom_tool_call carrying its input', () => {
    const chat = {
      created: 1,
      choices: [
        {
          index: 0,
          finish_reason: 'tool_calls',
          message: {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: 'call_p', type: 'function', function: { name: 'apply_patch', arguments: JSON.stringify({ input: PATCH }) } },
              { id: 'call_raw', type: 'function', function: { name: 'apply_patch', arguments: 'not json' } },
              { id: 'call_s', type: 'function', function: { name: 'shell', arguments: '{}' } },
            ],
          },
        },
      ],
    };
    const answer = createResponsesCodec(counting()).fromChat(chat, ctx);
    expect(answer.output).toEqual([
      { id: 'ctc_1', type: 'custom_tool_call', status: 'completed', call_id: 'call_p', name: 'apply_patch', input: PATCH },
      { id: 'ctc_2', type: 'custom_tool_call', status: 'completed', call_id: 'call_raw', name: 'apply_patch', input: 'not json' },
      { id: 'fc_1', type: 'function_call', status: 'completed', arguments: '{}', call_id: 'call_s', name: 'shell' },
    ]);
  });

  it('streams a custom tool call as custom_tool_call events that the SDK accumulates', async () => {
    const args = JSON.stringify({ input: PATCH });
    const backend =
      delta({ tool_calls: [{ index: 0, id: 'call_p', type: 'function', function: { name: 'apply_patch', arguments: args.slice(0, 12) } }] }) +
      delta({ tool_calls: [{ index: 0, function: { arguments: args.slice(12) } }] }) +
      delta({}, 'tool_calls') +
      data('[DONE]');
    const stream = createResponsesCodec(counting()).stream!(ctx);
    const sse = stream.push(backend) + stream.end();
    const events = eventsOf(sse);
    expect(events.map((e) => e.type)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.custom_tool_call_input.delta',
      'response.custom_tool_call_input.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(events[2].item).toEqual({ id: 'ctc_1', type: 'custom_tool_call', status: 'in_progress', call_id: 'call_p', name: 'apply_patch', input: '' });
    expect(events[4]).toMatchObject({ item_id: 'ctc_1', output_index: 0, input: PATCH });
    const final = await sdkAnsweredWith(200, sse, 'text/event-stream').responses.stream({ model: 'gpt-5-codex', input: 'patch it' }).finalResponse();
    expect(final.output).toEqual([{ id: 'ctc_1', type: 'custom_tool_call', status: 'completed', call_id: 'call_p', name: 'apply_patch', input: PATCH }]);
  });
});
