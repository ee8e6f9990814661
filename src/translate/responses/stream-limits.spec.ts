import { eventsOf, sdkAnsweredWith } from '../../../test/translate/support/responses-sdk-harness';
import type { AnswerContext, Json } from '../dialect-codec';
import { createResponsesCodec } from './codec';

const ctx: AnswerContext = { model: 'my-model', request: { model: 'my-model', input: 'Hi', stream: true } };
const data = (chunk: Json | string): string => `data: ${typeof chunk === 'string' ? chunk : JSON.stringify(chunk)}\n\n`;
const delta = (d: Json, finish_reason: string | null = null): string => data({ created: 1, choices: [{ index: 0, delta: d, finish_reason }] });

function translate(text: string, size = text.length || 1): string {
  const stream = createResponsesCodec().stream!(ctx);
  let out = '';
  for (let i = 0; i < text.length; i += size) out += stream.push(text.slice(i, i + size));
  return out + stream.end();
}

describe('responses codec: hostile backends and gateway failures', () => {
  it('ends with one response.failed (server_error) when the backend sends 2 MiB with no line end', () => {
    const stream = createResponsesCodec().stream!(ctx);
    let out = stream.push(delta({ content: 'Hi' }) + 'data: ');
    const piece = 'x'.repeat(64 * 1024);
    for (let sent = 0; sent < 2 * 1024 * 1024; sent += piece.length) out += stream.push(piece);
    out += stream.push('\n\n' + delta({ content: 'LATE-MARKER' }, 'stop')) + stream.end();
    const events = eventsOf(out);
    const failed = events.filter((e) => e.type === 'response.failed');
    expect(failed).toHaveLength(1);
    expect(events.at(-1)).toBe(failed[0]);
    expect(failed[0].response).toMatchObject({ status: 'failed', error: { code: 'server_error', message: expect.stringContaining('SSE line') } });
    // The text said so far is closed and kept in the final response.
    expect(failed[0].response.output[0].content[0].text).toBe('Hi');
    expect(out.includes('LATE-MARKER')).toBe(false);
  });

  it('translates 8 MiB of text deltas sent in 64 KiB pieces', () => {
    const piece = delta({ content: 'y'.repeat(1000) });
    const count = Math.ceil((8 * 1024 * 1024) / piece.length);
    const events = eventsOf(translate(piece.repeat(count) + delta({}, 'stop') + data('[DONE]'), 64 * 1024));
    expect(events.filter((e) => e.type === 'response.output_text.delta')).toHaveLength(count);
    expect(events.at(-1)).toMatchObject({ type: 'response.completed' });
    expect(events.find((e) => e.type === 'response.output_text.done')!.text).toHaveLength(count * 1000);
  });

  it('ends with response.failed once the held text passes 16 MiB', () => {
    const stream = createResponsesCodec().stream!(ctx);
    let out = '';
    const piece = delta({ content: 'z'.repeat(512 * 1024) });
    for (let i = 0; i < 33; i++) out += stream.push(piece);
    out += stream.push(delta({ content: 'LATE-MARKER' }, 'stop')) + stream.end();
    const events = eventsOf(out);
    expect(events.at(-1)).toMatchObject({ type: 'response.failed', response: { error: { code: 'server_error', message: expect.stringContaining('hold') } } });
    // The push that passed the cap is the last one said.
    expect(events.filter((e) => e.type === 'response.output_text.delta')).toHaveLength(33);
    expect(out.includes('LATE-MARKER')).toBe(false);
  });

  it('answers a gateway failure with the open items closed, then response.failed carrying its code and message', async () => {
    const stream = createResponsesCodec().stream!(ctx);
    let sse = stream.push(delta({ content: 'Par' }) + delta({ tool_calls: [{ index: 0, id: 'call_1', function: { name: 'f', arguments: '{"a"' } }] }));
    const failed = stream.fail!({ code: 'request_timeout', message: 'The request took longer than 600s', status: 504 });
    sse += failed;
    // The text item closed when the call began; the call is still open.
    expect(eventsOf(failed).map((e) => e.type)).toEqual(['response.function_call_arguments.done', 'response.output_item.done', 'response.failed']);
    expect(eventsOf(failed).at(-1)!.response).toMatchObject({
      status: 'failed',
      error: { code: 'request_timeout', message: 'The request took longer than 600s' },
    });
    expect(stream.push(delta({}, 'stop'))).toBe('');
    expect(stream.end()).toBe('');
    // The SDK reads it as the failed response it is (Codex matches on the event type).
    const seen: string[] = [];
    for await (const event of await sdkAnsweredWith(200, sse, 'text/event-stream').responses.create({ model: 'my-model', input: 'Hi', stream: true })) {
      seen.push(event.type);
    }
    expect(seen.at(-1)).toBe('response.failed');
  });
});
