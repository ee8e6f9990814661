import { JsonUsageScanner, SseUsageTracker, usageFromJsonBody } from './sse-usage';

/** Feeds `text` to a tracker in pieces of `size` characters, like arbitrary network reads. */
function track(text: string, size: number) {
  const t = new SseUsageTracker();
  for (let i = 0; i < text.length; i += size) t.push(text.slice(i, i + size));
  return t.finish();
}

const openAiStream =
  'data: {"choices":[{"delta":{"content":"Hi"}}],"usage":null}\n\n' +
  'data: {"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17}}\n\n' +
  'data: [DONE]\n\n';

const anthropicStream =
  'event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":25,"output_tokens":1}}}\n\n' +
  'event: content_block_delta\ndata: {"type":"content_block_delta","delta":{"type":"text_delta","text":"usage"}}\n\n' +
  'event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":15}}\n\n' +
  'event: message_stop\ndata: {"type":"message_stop"}\n\n';

const responsesStream =
  'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":"x"}\n\n' +
  'event: response.completed\ndata: {"type":"response.completed","response":{"usage":{"input_tokens":3,"output_tokens":4,"total_tokens":7}}}\n\n';

describe('token counts from SSE streams', () => {
  it.each([1, 2, 7, 64, 10_000])('reads the OpenAI final usage chunk whatever the read size (%i)', (size) => {
    expect(track(openAiStream, size)).toEqual({ prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 });
  });

  it.each([1, 3, 50])('combines Anthropic message_start input and the last message_delta output (read size %i)', (size) => {
    expect(track(anthropicStream, size)).toEqual({ prompt_tokens: 25, completion_tokens: 15, total_tokens: 40 });
  });

  it('reads the usage of response.completed (OpenAI responses API)', () => {
    expect(track(responsesStream, 5)).toEqual({ prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 });
  });

  it('handles CRLF line endings split between reads', () => {
    expect(track(openAiStream.replace(/\n/g, '\r\n'), 1)).toEqual({ prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 });
  });

  it('reads a final event that lacks the closing blank line', () => {
    expect(track('data: {"usage":{"prompt_tokens":1,"completion_tokens":2}}', 4)).toEqual({
      prompt_tokens: 1,
      completion_tokens: 2,
      total_tokens: 3,
    });
  });

  it('reports nothing for a stream without usage', () => {
    expect(track('data: {"choices":[]}\n\ndata: [DONE]\n\n', 3)).toBeUndefined();
  });
});

describe('token counts from JSON bodies', () => {
  it('reads OpenAI usage', () => {
    expect(usageFromJsonBody('{"usage":{"prompt_tokens":42,"completion_tokens":128,"total_tokens":170}}')).toEqual({
      prompt_tokens: 42,
      completion_tokens: 128,
      total_tokens: 170,
    });
  });

  it('reads Anthropic usage, counting cached prompt tokens as prompt', () => {
    expect(usageFromJsonBody('{"usage":{"input_tokens":10,"cache_read_input_tokens":90,"output_tokens":5}}')).toEqual({
      prompt_tokens: 100,
      completion_tokens: 5,
      total_tokens: 105,
    });
  });

  it('ignores bodies that are not JSON or carry no usage', () => {
    expect(usageFromJsonBody('upstream "usage" exploded')).toBeUndefined();
    expect(usageFromJsonBody('{"usage":null}')).toBeUndefined();
  });
});

/** Feeds `text` to a JsonUsageScanner in pieces of `size` characters. */
function scan(text: string, size: number) {
  const scanner = new JsonUsageScanner();
  for (let i = 0; i < text.length; i += size) scanner.push(text.slice(i, i + size));
  return scanner.finish();
}

describe('token counts from a JSON body read in pieces (JsonUsageScanner)', () => {
  const openAi = JSON.stringify({
    id: 'chatcmpl-1',
    choices: [{ index: 0, message: { role: 'assistant', content: 'say "usage": {"prompt_tokens": 999} \\ and {[,:]}' } }],
    usage: { prompt_tokens: 42, completion_tokens: 128, total_tokens: 170 },
  });
  const anthropic = JSON.stringify({
    type: 'message',
    usage: { input_tokens: 10, cache_read_input_tokens: 90, output_tokens: 5 },
    content: [{ type: 'text', text: 'usage' }],
  });
  const responses = JSON.stringify({ object: 'response', output: [], usage: { input_tokens: 3, output_tokens: 4, total_tokens: 7 } });

  it.each([1, 2, 3, 7, 64, 100_000])('agrees with usageFromJsonBody on OpenAI, Anthropic and Responses bodies (piece size %i)', (size) => {
    for (const body of [openAi, anthropic, responses]) expect(scan(body, size)).toEqual(usageFromJsonBody(body));
    expect(scan(openAi, size)).toEqual({ prompt_tokens: 42, completion_tokens: 128, total_tokens: 170 });
  });

  it('only reads the top-level usage member, not a nested one or text that looks like it', () => {
    const body = JSON.stringify({
      data: [{ usage: { prompt_tokens: 1 } }, 'usage', { 'us"age': 2 }],
      meta: { usage: { prompt_tokens: 2 } },
      note: '"usage":{"prompt_tokens":3}',
      'usage\\': { prompt_tokens: 4 },
    });
    expect(scan(body, 5)).toBeUndefined();
    expect(scan(JSON.stringify(['usage', { prompt_tokens: 5 }]), 3)).toBeUndefined();
    expect(scan(JSON.stringify({ meta: { usage: 1 }, usage: { completion_tokens: 6 } }), 2)).toEqual({ completion_tokens: 6 });
  });

  it('reports nothing for a body without usage, with usage null, or that is not JSON', () => {
    expect(scan('{"choices":[]}', 3)).toBeUndefined();
    expect(scan('{"usage":null}', 3)).toBeUndefined();
    expect(scan('upstream "usage": exploded', 4)).toBeUndefined();
    expect(scan('{"usage":{"prompt_tokens":1', 4)).toBeUndefined();
  });

  it('skips a usage value too large to be real instead of holding it', () => {
    const body = `{"usage":{"prompt_tokens":1,"pad":"${'x'.repeat(70_000)}"}}`;
    expect(scan(body, 4096)).toBeUndefined();
  });
});
