import { withGpuTime } from './usage-gpu-time';

describe('withGpuTime (GPU time in a stream final usage)', () => {
  it("adds gpu_time_ms to an OpenAI stream's usage chunk, not to chunks with usage null", () => {
    const last = 'data: {"id":"c","choices":[],"usage":{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18}}\n\n';
    expect(JSON.parse(withGpuTime(last, 450.4).slice(6)).usage).toEqual({ gpu_time_ms: 450, prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 });
    const mid = 'data: {"id":"c","choices":[{"delta":{"content":"hi"}}],"usage":null}\n\n';
    expect(withGpuTime(mid, 5)).toBe(mid);
    expect(JSON.parse(withGpuTime('data: {"usage":{}}\n\n', 3).slice(6))).toEqual({ usage: { gpu_time_ms: 3 } });
  });

  it("adds it to the Responses API's response.completed, not to response.created (usage null)", () => {
    const created = 'event: response.created\ndata: {"type":"response.created","response":{"id":"r","usage":null}}\n\n';
    const completed = 'event: response.completed\ndata: {"type":"response.completed","response":{"id":"r","usage":{"input_tokens":5,"output_tokens":2}}}\n\n';
    expect(withGpuTime(created, 1)).toBe(created);
    expect(JSON.parse(withGpuTime(completed, 12).split('data: ')[1]).response.usage).toEqual({ gpu_time_ms: 12, input_tokens: 5, output_tokens: 2 });
  });

  it("adds it to Anthropic's message_delta, never to message_start; never inside model text", () => {
    const delta = 'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":15}}\n\n';
    expect(withGpuTime(delta, 9)).toContain('"usage":{"gpu_time_ms":9,"output_tokens":15}');
    const start = 'event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":3}}}\n\n';
    expect(withGpuTime(start, 9)).toBe(start);
    const whole = start + delta;
    expect(withGpuTime(whole, 4)).toBe(start + delta.replace('"usage":{', '"usage":{"gpu_time_ms":4,'));
    const text = 'data: {"choices":[{"delta":{"content":"say \\"usage\\":{ please"}}]}\n\n';
    expect(withGpuTime(text, 9)).toBe(text);
  });
});
