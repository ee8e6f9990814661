import { Stream } from '@anthropic-ai/sdk/core/streaming';
import { MessageStream } from '@anthropic-ai/sdk/lib/MessageStream';
import type { Message } from '@anthropic-ai/sdk/resources/messages';
import type { Json } from '../dialect-codec';
import { anthropicCodec } from './anthropic.codec';

const ctx = { model: 'claude-sonnet-4-5', request: {} };
const data = (chunk: Json | string): string => `data: ${typeof chunk === 'string' ? chunk : JSON.stringify(chunk)}\n\n`;
const delta = (d: Json, finish_reason: string | null = null): string => data({ choices: [{ index: 0, delta: d, finish_reason }] });
const call = (index: number, fn: Json, id?: string): string => delta({ tool_calls: [{ index, ...(id ? { id } : {}), function: fn }] });

function events(sse: string): Json[] {
  return sse
    .split('\n\n')
    .filter((e) => e !== '')
    .map((e) => JSON.parse(e.split('\n')[1].slice('data: '.length)) as Json);
}

function finalMessage(sse: string): Promise<Message> {
  const sdkStream = Stream.fromSSEResponse(new Response(sse), new AbortController());
  return MessageStream.fromReadableStream(sdkStream.toReadableStream()).finalMessage();
}

/** The whole output for the backend text given in pieces of `size`, and what `end()` adds. */
function translate(text: string, size = text.length || 1): string {
  const stream = anthropicCodec.stream!(ctx);
  let out = '';
  for (let i = 0; i < text.length; i += size) out += stream.push(text.slice(i, i + size));
  return out + stream.end();
}

describe('anthropicCodec.stream: hostile backends and gateway failures', () => {
  it('ends with one api_error event when the backend sends 2 MiB with no line end', () => {
    const stream = anthropicCodec.stream!(ctx);
    let out = stream.push(delta({ content: 'Hi' }) + 'data: ');
    const piece = 'x'.repeat(64 * 1024);
    for (let sent = 0; sent < 2 * 1024 * 1024; sent += piece.length) out += stream.push(piece);
    out += stream.push('\n\n' + delta({ content: 'LATE-MARKER' }, 'stop')) + stream.end();
    const list = events(out);
    expect(list.filter((e) => e.type === 'error')).toEqual([{ type: 'error', error: { type: 'api_error', message: expect.stringContaining('SSE line') } }]);
    expect(list.at(-1)?.type).toBe('error');
    expect(out.includes('LATE-MARKER')).toBe(false);
  });

  it('translates 8 MiB of text deltas sent in 64 KiB pieces', async () => {
    const piece = delta({ content: 'y'.repeat(1000) });
    const count = Math.ceil((8 * 1024 * 1024) / piece.length);
    const out = translate(piece.repeat(count) + delta({}, 'stop') + data('[DONE]'), 64 * 1024);
    const message = await finalMessage(out);
    expect(message.stop_reason).toBe('end_turn');
    expect((message.content[0] as { text: string }).text).toHaveLength(count * 1000);
  });

  it("takes vLLM's flat in-stream error for an error, not a truncated success", () => {
    const list = events(translate(delta({ content: 'Par' }) + data({ object: 'error', message: 'prompt is too long', code: 400 }) + data('[DONE]')));
    expect(list.at(-1)).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: 'prompt is too long' } });
    expect(list.map((e) => e.type)).not.toContain('message_stop');
  });

  it('fails a [DONE] that came without any finish_reason', () => {
    const list = events(translate(delta({ content: 'half' }) + data('[DONE]')));
    expect(list.at(-1)).toEqual({ type: 'error', error: { type: 'api_error', message: expect.stringContaining('ended before') } });
    expect(list.map((e) => e.type)).not.toContain('message_delta');
  });

  it('keeps every tool call open until the end: interleaved parallel calls keep all their arguments, blocks one after another', async () => {
    const text =
      call(0, { name: 'read', arguments: '{"path":' }, 'call_a') +
      call(1, { name: 'grep', arguments: '{"q":' }, 'call_b') +
      call(0, { arguments: '"a.ts"}' }) +
      call(1, { arguments: '"TODO"}' }) +
      delta({}, 'tool_calls');
    const out = translate(text, 9);
    const order = events(out)
      .filter((e) => e.type === 'content_block_start' || e.type === 'content_block_stop')
      .map((e) => `${String(e.type)}:${String(e.index)}`);
    expect(order).toEqual(['content_block_start:0', 'content_block_stop:0', 'content_block_start:1', 'content_block_stop:1']);
    const message = await finalMessage(out);
    expect(message.stop_reason).toBe('tool_use');
    expect(message.content).toEqual([
      { type: 'tool_use', id: 'call_a', name: 'read', input: { path: 'a.ts' } },
      { type: 'tool_use', id: 'call_b', name: 'grep', input: { q: 'TODO' } },
    ]);
  });

  it('ends with an api_error event once the held tool arguments pass 16 MiB', () => {
    const stream = anthropicCodec.stream!(ctx);
    let out = stream.push(call(0, { name: 'write', arguments: '{"text":"' }, 'call_w'));
    const piece = call(0, { arguments: 'z'.repeat(512 * 1024) });
    for (let i = 0; i < 33; i++) out += stream.push(piece);
    out += stream.push(delta({}, 'tool_calls')) + stream.end();
    const list = events(out);
    expect(list.at(-1)).toEqual({ type: 'error', error: { type: 'api_error', message: expect.stringContaining('hold') } });
    expect(list.map((e) => e.type)).not.toContain('content_block_start');
  });

  it('answers a gateway failure with one error event in Anthropic’s shape, and nothing after it', () => {
    const stream = anthropicCodec.stream!(ctx);
    expect(events(stream.push(delta({ content: 'Hel' }))).map((e) => e.type)).toContain('content_block_delta');
    const failed = stream.fail!({ code: 'request_timeout', message: 'The request took longer than 600s', status: 504 });
    expect(events(failed)).toEqual([{ type: 'error', error: { type: 'timeout_error', message: 'The request took longer than 600s' } }]);
    expect(stream.push(delta({ content: 'lo' }, 'stop'))).toBe('');
    expect(stream.end()).toBe('');
    expect(stream.fail!({ code: 'x', message: 'y', status: 500 })).toBe('');
  });
});
