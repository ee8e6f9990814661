import fc from 'fast-check';
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

const ctx: AnswerContext = { model: 'my-model', request: { model: 'my-model', input: 'Hi', stream: true } };

function chunk(delta: Json, finish: string | null = null, extra: Json = {}): string {
  return `data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'served', choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`;
}
const usage = `data: ${JSON.stringify({ id: 'chatcmpl-1', created: 1_700_000_000, choices: [], usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 } })}\n\n`;
const DONE = 'data: [DONE]\n\n';

const textStream = chunk({ role: 'assistant', content: '' }) + chunk({ content: 'Hel' }) + chunk({ content: 'lo!' }) + chunk({}, 'stop') + usage + DONE;
const callStream =
  chunk({ role: 'assistant', content: 'Checking.' }) +
  chunk({ tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'weather', arguments: '' } }] }) +
  chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }) +
  chunk({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }) +
  chunk({ tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'weather', arguments: '{"city":"Rome"}' } }] }) +
  chunk({}, 'tool_calls') +
  usage +
  DONE;

/** The codec's whole output for a backend stream given in the chunks `cuts` makes. */
function translate(backend: string, cuts: number[] = [], context = ctx): string {
  const stream = createResponsesCodec(counting()).stream!(context);
  let out = '';
  let from = 0;
  for (const at of [...cuts].sort((a, b) => a - b)) {
    out += stream.push(backend.slice(from, at));
    from = Math.max(from, at);
  }
  return out + stream.push(backend.slice(from)) + stream.end();
}

describe('responses codec: streamed answers', () => {
  it('sends the events of a text answer in order, numbered from 0', () => {
    const events = eventsOf(translate(textStream));
    expect(events.map((e) => e.type)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    expect(events[0].response).toMatchObject({ id: 'resp_1', status: 'in_progress', model: 'my-model', created_at: 1_700_000_000, output: [] });
    const done = events[events.length - 1].response;
    expect(done).toMatchObject({ id: 'resp_1', status: 'completed', usage: { input_tokens: 7, output_tokens: 3, total_tokens: 10 } });
    expect(done.output).toEqual([
      {
        id: 'msg_1',
        type: 'message',
        status: 'completed',
        role: 'assistant',
        content: [{ type: 'output_text', text: 'Hello!', annotations: [], logprobs: [] }],
      },
    ]);
  });

  it('is accepted by the SDK’s stream helper: finalResponse() has the text and usage', async () => {
    const sdk = sdkAnsweredWith(200, translate(textStream), 'text/event-stream');
    const deltas: string[] = [];
    const stream = sdk.responses.stream({ model: 'my-model', input: 'Hi' }).on('response.output_text.delta', (e) => deltas.push(e.delta));
    const final = await stream.finalResponse();
    expect(deltas).toEqual(['Hel', 'lo!']);
    expect(final.output_text).toBe('Hello!');
    expect(final.usage?.total_tokens).toBe(10);
  });

  it('streams tool calls as function_call items the SDK assembles', async () => {
    const sse = translate(callStream);
    const events = eventsOf(sse);
    const args = events.filter((e) => e.type === 'response.function_call_arguments.done');
    expect(args.map((e) => [e.output_index, e.name, e.arguments])).toEqual([
      [1, 'weather', '{"city":"Paris"}'],
      [2, 'weather', '{"city":"Rome"}'],
    ]);
    const seen: string[] = [];
    for await (const event of await sdkAnsweredWith(200, sse, 'text/event-stream').responses.create({ model: 'my-model', input: 'Hi', stream: true })) {
      seen.push(event.type);
    }
    expect(seen).toEqual(events.map((e) => e.type));
    const final = await sdkAnsweredWith(200, sse, 'text/event-stream').responses.stream({ model: 'my-model', input: 'Hi' }).finalResponse();
    expect(final.output_text).toBe('Checking.');
    expect(final.output.slice(1)).toMatchObject([
      { id: 'fc_1', type: 'function_call', status: 'completed', arguments: '{"city":"Paris"}', call_id: 'call_a', name: 'weather' },
      { id: 'fc_2', type: 'function_call', status: 'completed', arguments: '{"city":"Rome"}', call_id: 'call_b', name: 'weather' },
    ]);
  });

  it('gives the same events whether the backend’s bytes come whole, one character at a time, or cut anywhere, with \\r\\n line ends', () => {
    const whole = translate(callStream);
    expect(
      translate(
        callStream,
        [...callStream].map((_, i) => i),
      ),
    ).toBe(whole);
    expect(translate(callStream.replace(/\n/g, '\r\n'))).toBe(whole);
    fc.assert(fc.property(fc.array(fc.nat({ max: callStream.length })), (cuts) => translate(callStream, cuts) === whole));
  });

  it('streams reasoning text as a reasoning item with a summary before the answer', async () => {
    const sse = translate(chunk({ reasoning_content: 'Think' }) + chunk({ reasoning_content: 'ing.' }) + chunk({ content: 'Hi' }) + chunk({}, 'stop') + DONE);
    const types = eventsOf(sse).map((e) => e.type);
    expect(types.slice(2, 9)).toEqual([
      'response.output_item.added',
      'response.reasoning_summary_part.added',
      'response.reasoning_summary_text.delta',
      'response.reasoning_summary_text.delta',
      'response.reasoning_summary_text.done',
      'response.reasoning_summary_part.done',
      'response.output_item.done',
    ]);
    const final = await sdkAnsweredWith(200, sse, 'text/event-stream').responses.stream({ model: 'my-model', input: 'Hi' }).finalResponse();
    expect(final.output[0]).toEqual({ id: 'rs_1', type: 'reasoning', summary: [{ type: 'summary_text', text: 'Thinking.' }] });
    expect(final.output_text).toBe('Hi');
  });

  it('ends with response.incomplete (max_output_tokens) when the backend stopped at the token limit', () => {
    const events = eventsOf(translate(chunk({ content: 'Once upon' }) + chunk({}, 'length') + DONE));
    const last = events[events.length - 1];
    expect(last.type).toBe('response.incomplete');
    expect(last.response).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } });
    expect(last.response.output[0].status).toBe('incomplete');
  });

  it('ends with response.failed when the backend reports an error mid-stream, and sends nothing after', () => {
    const stream = createResponsesCodec(counting()).stream!(ctx);
    const out = stream.push(chunk({ content: 'Par' }) + `data: ${JSON.stringify({ error: { message: 'CUDA out of memory', code: 'oom' } })}\n\n`);
    const events = eventsOf(out);
    const last = events[events.length - 1];
    expect(last.type).toBe('response.failed');
    expect(last.response).toMatchObject({ status: 'failed', error: { code: 'oom', message: 'CUDA out of memory' } });
    expect(last.response.output[0].content[0].text).toBe('Par');
    expect(stream.push(chunk({ content: 'is' }))).toBe('');
    expect(stream.end()).toBe('');
  });

  it('ends with response.failed when the backend stream broke off before finishing, even with a [DONE]', () => {
    for (const backend of [chunk({ content: 'Par' }), chunk({ content: 'Par' }) + DONE]) {
      const events = eventsOf(translate(backend));
      expect(events[events.length - 1]).toMatchObject({ type: 'response.failed', response: { status: 'failed', error: { code: 'server_error' } } });
    }
  });

  it('completes an empty answer, and generates a call id the backend left out', () => {
    expect(eventsOf(translate(chunk({}, 'stop') + DONE)).map((e) => e.type)).toEqual(['response.created', 'response.in_progress', 'response.completed']);
    const events = eventsOf(translate(chunk({ tool_calls: [{ index: 0, function: { name: 'f', arguments: '{}' } }] }) + chunk({}, 'tool_calls') + DONE));
    expect(events.find((e) => e.type === 'response.output_item.done')!.item).toMatchObject({ call_id: 'call_1', name: 'f', arguments: '{}' });
  });

  it('names the namespace of a called function that came from a namespace tool', () => {
    const request = { input: 'x', tools: [{ type: 'namespace', name: 'mcp__docs', tools: [{ type: 'function', name: 'search_docs' }] }] };
    const events = eventsOf(
      translate(chunk({ tool_calls: [{ index: 0, id: 'c', function: { name: 'search_docs', arguments: '{}' } }] }) + DONE, [], { model: 'm', request }),
    );
    expect(events.find((e) => e.type === 'response.output_item.done')!.item.namespace).toBe('mcp__docs');
  });

  it('never throws and always ends with one final event, whatever the backend sent', () => {
    const line = fc.oneof(
      fc.jsonValue().map((v) => `data: ${JSON.stringify(v)}\n\n`),
      fc.record({ content: fc.jsonValue(), reasoning_content: fc.jsonValue(), tool_calls: fc.jsonValue() }, { requiredKeys: [] }).map((d) => chunk(d as Json)),
      fc.string(),
    );
    fc.assert(
      fc.property(fc.array(line), (lines) => {
        const types = eventsOf(translate(lines.join(''))).map((e) => e.type);
        const finals = types.filter((t) => t === 'response.completed' || t === 'response.incomplete' || t === 'response.failed');
        expect(finals).toHaveLength(1);
        expect(types[types.length - 1]).toBe(finals[0]);
      }),
      { numRuns: 200 },
    );
  });
});
