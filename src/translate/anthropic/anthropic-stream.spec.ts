import { Stream } from '@anthropic-ai/sdk/core/streaming';
import { MessageStream } from '@anthropic-ai/sdk/lib/MessageStream';
import type { Message } from '@anthropic-ai/sdk/resources/messages';
import type { Json } from '../dialect-codec';
import { anthropicCodec } from './anthropic.codec';

const ctx = (request: Json = {}) => ({ model: 'claude-sonnet-4-5', request });

/** A backend's SSE text for these chunks (`\n\n` between events unless told otherwise). */
function backend(chunks: Json[], { done = true, eol = '\n' } = {}): string {
  const events = chunks.map((c) => `data: ${JSON.stringify(c)}${eol}${eol}`);
  return events.join('') + (done ? `data: [DONE]${eol}${eol}` : '');
}

const delta = (d: Json, finish_reason: string | null = null, extra: Json = {}): Json => ({
  id: 'chatcmpl-1',
  object: 'chat.completion.chunk',
  choices: [{ index: 0, delta: d, finish_reason, ...extra }],
});
const usage = (prompt: number, completion: number): Json => ({
  id: 'chatcmpl-1',
  choices: [],
  usage: { prompt_tokens: prompt, completion_tokens: completion },
});

/** The translator's whole output when the backend text arrives in pieces of `size` characters. */
function translate(text: string, request: Json = {}, size = text.length || 1): string {
  const stream = anthropicCodec.stream!(ctx(request));
  let out = '';
  for (let i = 0; i < text.length; i += size) out += stream.push(text.slice(i, i + size));
  return out + stream.end();
}

/** The events, each checked to name its type both in `event:` and in the data. */
function events(sse: string): Json[] {
  return sse
    .split('\n\n')
    .filter((e) => e !== '')
    .map((e) => {
      const [eventLine, dataLine, ...rest] = e.split('\n');
      expect(rest).toEqual([]);
      const data = JSON.parse(dataLine.slice('data: '.length)) as Json;
      expect(eventLine).toBe(`event: ${String(data.type)}`);
      return data;
    });
}

/** The Anthropic SDK's own SSE parser and MessageStream accumulator over the translator's output. */
function finalMessage(sse: string): Promise<Message> {
  const sdkStream = Stream.fromSSEResponse(new Response(sse), new AbortController());
  return MessageStream.fromReadableStream(sdkStream.toReadableStream()).finalMessage();
}

const textAnswer = backend([
  delta({ role: 'assistant', content: '' }),
  delta({ content: 'Hel' }),
  delta({ content: 'lo ' }),
  delta({ content: 'wörld 👋' }),
  delta({}, 'stop'),
  usage(11, 4),
]);

describe('anthropicCodec.stream', () => {
  it('emits the full Messages event sequence that the SDK accumulates into the answer', async () => {
    const out = translate(textAnswer);
    expect(events(out).map((e) => e.type)).toEqual([
      'message_start',
      'ping',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    const [start, , blockStart] = events(out);
    expect(start.message).toMatchObject({ id: expect.stringMatching(/^msg_/), role: 'assistant', model: 'claude-sonnet-4-5', content: [] });
    expect(blockStart).toEqual({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
    const message = await finalMessage(out);
    expect(message.content).toEqual([{ type: 'text', text: 'Hello wörld 👋' }]);
    expect(message).toMatchObject({ stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 11, output_tokens: 4 } });
  });

  it('gives the same events whatever way the backend text is cut, with \\n or \\r\\n line ends', () => {
    const strip = (sse: string) => events(sse).map((e) => (e.type === 'message_start' ? { ...e, message: { ...(e.message as Json), id: 'x' } } : e));
    const whole = strip(translate(textAnswer));
    const crlf = backend([delta({ content: 'Hel' }), delta({ content: 'lo ' }), delta({ content: 'wörld 👋' }), delta({}, 'stop'), usage(11, 4)], {
      eol: '\r\n',
    });
    for (const size of [1, 2, 3, 7, 13]) {
      expect(strip(translate(textAnswer, {}, size))).toEqual(whole);
      expect(strip(translate(crlf, {}, size))).toEqual(whole);
    }
  });

  it('streams each tool call in its own block, arguments as the backend streamed them', async () => {
    const text = backend([
      delta({ content: 'Checking both.' }),
      delta({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'weather', arguments: '' } }] }),
      delta({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }),
      delta({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }),
      delta({ tool_calls: [{ index: 1, type: 'function', function: { name: 'clock', arguments: '{"tz":"CET"}' } }] }),
      delta({}, 'tool_calls'),
      usage(30, 20),
    ]);
    const out = translate(text, {}, 5);
    const list = events(out);
    const starts = list.filter((e) => e.type === 'content_block_start');
    expect(starts.map((e) => e.index)).toEqual([0, 1, 2]);
    expect(starts[1].content_block).toEqual({ type: 'tool_use', id: 'call_1', name: 'weather', input: {} });
    expect((starts[2].content_block as Json).id).toMatch(/^toolu_/);
    const json = list.filter((e) => (e.delta as Json | undefined)?.type === 'input_json_delta');
    expect(json.map((e) => [e.index, (e.delta as Json).partial_json])).toEqual([
      [1, '{"city":'],
      [1, '"Paris"}'],
      [2, '{"tz":"CET"}'],
    ]);
    // Blocks never overlap: each stops before the next starts.
    const order = list.filter((e) => e.type === 'content_block_start' || e.type === 'content_block_stop').map((e) => `${String(e.type)}:${String(e.index)}`);
    expect(order).toEqual([
      'content_block_start:0',
      'content_block_stop:0',
      'content_block_start:1',
      'content_block_stop:1',
      'content_block_start:2',
      'content_block_stop:2',
    ]);
    const message = await finalMessage(out);
    expect(message.stop_reason).toBe('tool_use');
    expect(message.content).toEqual([
      { type: 'text', text: 'Checking both.' },
      { type: 'tool_use', id: 'call_1', name: 'weather', input: { city: 'Paris' } },
      { type: 'tool_use', id: expect.stringMatching(/^toolu_/), name: 'clock', input: { tz: 'CET' } },
    ]);
  });

  it('sends {} as the only argument delta when the arguments are not a JSON object', async () => {
    for (const args of ['not json', '[1,2]', '', '{"open": ']) {
      const text = backend([delta({ tool_calls: [{ index: 0, id: 'c1', function: { name: 'f', arguments: args } }] }), delta({}, 'tool_calls')]);
      const out = translate(text);
      const json = events(out).filter((e) => (e.delta as Json | undefined)?.type === 'input_json_delta');
      expect(json.map((e) => (e.delta as Json).partial_json)).toEqual(['{}']);
      expect((await finalMessage(out)).content).toEqual([{ type: 'tool_use', id: 'c1', name: 'f', input: {} }]);
    }
  });

  it('turns reasoning into a thinking block when thinking was asked for, and drops it otherwise', async () => {
    const text = backend([delta({ reasoning_content: 'Let me ' }), delta({ reasoning_content: 'think.' }), delta({ content: '42' }), delta({}, 'stop')]);
    const asked = await finalMessage(translate(text, { thinking: { type: 'enabled', budget_tokens: 1024 } }));
    expect(asked.content).toEqual([
      { type: 'thinking', thinking: 'Let me think.', signature: '' },
      { type: 'text', text: '42' },
    ]);
    const vllm = backend([delta({ reasoning: 'hmm' }), delta({ content: 'ok' }), delta({}, 'stop')]);
    expect((await finalMessage(translate(vllm, { thinking: { type: 'adaptive' } }))).content[0]).toEqual({ type: 'thinking', thinking: 'hmm', signature: '' });
    const notAsked = await finalMessage(translate(text));
    expect(notAsked.content).toEqual([{ type: 'text', text: '42' }]);
  });

  it('maps stop reasons: reported or trailing stop sequences, length, and usage 0 when absent', async () => {
    const request = { stop_sequences: ['</answer>', 'STOP'] };
    const llama = backend([delta({ content: 'x' }), { ...delta({}, 'stop'), stopping_word: '</answer>' }]);
    expect(await finalMessage(translate(llama, request))).toMatchObject({ stop_reason: 'stop_sequence', stop_sequence: '</answer>' });
    const vllm = backend([delta({ content: 'x' }), delta({}, 'stop', { stop_reason: 'STOP' })]);
    expect(await finalMessage(translate(vllm, request))).toMatchObject({ stop_reason: 'stop_sequence', stop_sequence: 'STOP' });
    const trailing = backend([delta({ content: 'x </ans' }), delta({ content: 'wer>' }), delta({}, 'stop')]);
    expect(await finalMessage(translate(trailing, request))).toMatchObject({ stop_reason: 'stop_sequence', stop_sequence: '</answer>' });
    const length = await finalMessage(translate(backend([delta({ content: 'x' }), delta({}, 'length')]), request));
    expect(length).toMatchObject({ stop_reason: 'max_tokens', stop_sequence: null, usage: { input_tokens: 0, output_tokens: 0 } });
  });

  it('closes the answer when the backend finished but sent no [DONE]', async () => {
    const text = backend([delta({ content: 'hi' }), delta({}, 'stop')], { done: false });
    expect((await finalMessage(translate(text))).content).toEqual([{ type: 'text', text: 'hi' }]);
  });

  it('reports an error event, not a fake end_turn, when the stream stops before the answer is complete', async () => {
    const out = translate(backend([delta({ content: 'half an ans' })], { done: false }));
    const list = events(out);
    expect(list.at(-1)).toEqual({ type: 'error', error: { type: 'api_error', message: expect.stringContaining('ended before') } });
    expect(list.map((e) => e.type)).not.toContain('message_stop');
    await expect(finalMessage(out)).rejects.toMatchObject({ error: { type: 'error', error: { type: 'api_error' } } });
  });

  it("passes a backend's in-stream error on as an error event and stops there", async () => {
    const text = backend([
      delta({ content: 'a' }),
      { error: { code: 503, message: 'Loading model', type: 'unavailable_error' } },
      delta({ content: 'ignored' }),
    ]);
    const list = events(translate(text));
    expect(list.at(-1)).toEqual({ type: 'error', error: { type: 'overloaded_error', message: 'Loading model' } });
    expect(JSON.stringify(list)).not.toContain('ignored');
  });

  it('skips comments, other fields and undecodable data without failing', async () => {
    const text = `: keep-alive\n\nevent: chunk\nid: 4\ndata: {not json\n\ndata: 42\n\n${backend([delta({ content: 'fine' }), delta({}, 'stop')])}`;
    expect((await finalMessage(translate(text, {}, 4))).content).toEqual([{ type: 'text', text: 'fine' }]);
    const empty = anthropicCodec.stream!(ctx());
    expect(events(empty.end()).map((e) => e.type)).toEqual(['message_start', 'ping', 'error']);
  });

  it('says nothing until the backend sent a whole event (a JSON error body is never taken for a stream)', () => {
    const stream = anthropicCodec.stream!(ctx());
    expect(stream.push('{"error":{"message":"bad",')).toBe('');
    expect(stream.push('"code":400}}')).toBe('');
    const partial = anthropicCodec.stream!(ctx());
    expect(partial.push('data: {"choices":[{"delta":{"content":"a"}}]}')).toBe('');
    expect(events(partial.push('\n\n')).map((e) => e.type)).toEqual(['message_start', 'ping', 'content_block_start', 'content_block_delta']);
  });

  it('emits nothing more after the answer closed', () => {
    const stream = anthropicCodec.stream!(ctx());
    const first = stream.push(backend([delta({ content: 'a' }), delta({}, 'stop')]));
    expect(events(first).at(-1)).toEqual({ type: 'message_stop' });
    expect(stream.push(backend([delta({ content: 'late' })]))).toBe('');
    expect(stream.end()).toBe('');
  });
});
