import { SseUsageTracker, usageFromJsonBody } from './sse-usage';

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
    expect(
      usageFromJsonBody('{"usage":{"input_tokens":10,"cache_read_input_tokens":90,"output_tokens":5}}'),
    ).toEqual({ prompt_tokens: 100, completion_tokens: 5, total_tokens: 105 });
  });

  it('ignores bodies that are not JSON or carry no usage', () => {
    expect(usageFromJsonBody('upstream "usage" exploded')).toBeUndefined();
    expect(usageFromJsonBody('{"usage":null}')).toBeUndefined();
  });
});
