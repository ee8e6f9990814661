import { extractRequirements } from './requirements';

describe('extractRequirements', () => {
  describe('OpenAI chat completions', () => {
    const path = '/v1/chat/completions';
    it('finds vision in image_url parts, counts only text parts, and reads tools and json_mode', () => {
      const req = extractRequirements(path, {
        messages: [
          { role: 'system', content: 'x'.repeat(40) },
          {
            role: 'user',
            content: [
              { type: 'text', text: 'y'.repeat(20) },
              { type: 'image_url', image_url: { url: 'data:' + 'z'.repeat(9999) } },
            ],
          },
        ],
        tools: [{ type: 'function', function: { name: 'f' } }],
        response_format: { type: 'json_schema', json_schema: {} },
      });
      expect(req).toEqual({ vision: true, tools: true, jsonMode: true, estimatedTokens: 15, endpoint: path });
    });

    it('needs nothing for a plain text request', () => {
      expect(extractRequirements(path, { messages: [{ role: 'user', content: 'hello' }], tools: [], response_format: { type: 'text' } })).toEqual({
        vision: false,
        tools: false,
        jsonMode: false,
        estimatedTokens: 1,
        endpoint: path,
      });
    });

    it('accepts json_object as json mode', () => {
      expect(extractRequirements(path, { messages: [], response_format: { type: 'json_object' } }).jsonMode).toBe(true);
    });
  });

  it('legacy completions: the prompt string or list of strings counts; token arrays do not', () => {
    expect(extractRequirements('/v1/completions', { prompt: 'a'.repeat(8) }).estimatedTokens).toBe(2);
    expect(extractRequirements('/v1/completions', { prompt: ['a'.repeat(8), 'b'.repeat(8), [1, 2, 3]] }).estimatedTokens).toBe(4);
    expect(extractRequirements('/v1/completions', { prompt: 'x', response_format: { type: 'json_object' } }).jsonMode).toBe(true);
  });

  describe('Responses', () => {
    const path = '/v1/responses';
    it('finds input_image parts, text.format json, and counts instructions and input text', () => {
      const req = extractRequirements(path, {
        instructions: 'i'.repeat(8),
        input: [
          {
            role: 'user',
            content: [
              { type: 'input_text', text: 't'.repeat(8) },
              { type: 'input_image', image_url: 'https://x' },
            ],
          },
        ],
        text: { format: { type: 'json_schema', name: 'x', schema: {} } },
        tools: [{ type: 'function', name: 'f' }],
      });
      expect(req).toEqual({ vision: true, tools: true, jsonMode: true, estimatedTokens: 4, endpoint: path });
    });

    it('counts a string input and needs no vision for it', () => {
      expect(extractRequirements(path, { input: 'q'.repeat(12) })).toMatchObject({ vision: false, estimatedTokens: 3 });
    });

    it('is not fooled by the chat dialect image type', () => {
      expect(extractRequirements(path, { input: [{ content: [{ type: 'image_url' }] }] }).vision).toBe(false);
    });
  });

  describe('Anthropic messages', () => {
    const path = '/v1/messages';
    it('finds image blocks, counts system (string or blocks) and message text, never json_mode', () => {
      const req = extractRequirements(path, {
        system: [{ type: 'text', text: 's'.repeat(8) }],
        messages: [
          {
            role: 'user',
            content: [
              { type: 'image', source: {} },
              { type: 'text', text: 'm'.repeat(8) },
            ],
          },
        ],
        tools: [{ name: 't', input_schema: {} }],
        response_format: { type: 'json_object' },
      });
      expect(req).toEqual({ vision: true, tools: true, jsonMode: false, estimatedTokens: 4, endpoint: path });
      expect(extractRequirements(path, { system: 's'.repeat(4), messages: [{ role: 'user', content: 'u'.repeat(4) }] }).estimatedTokens).toBe(2);
    });
  });

  it('embeddings: the input text counts toward the context', () => {
    expect(extractRequirements('/v1/embeddings', { input: ['a'.repeat(6), 'b'.repeat(6)] })).toMatchObject({ estimatedTokens: 3, vision: false });
  });

  it.each([
    ['messages is a string', { messages: 'hello' }],
    ['messages holds nulls and numbers', { messages: [null, 3, { content: null }, { content: [null, 'x', { type: 5 }] }] }],
    ['tools is an object', { tools: { a: 1 } }],
    ['response_format is a string', { response_format: 'json_object' }],
    ['content parts have non-string text', { messages: [{ content: [{ type: 'text', text: 42 }] }] }],
  ])('never throws on malformed shapes (%s): they count as not needing the capability', (_label, body) => {
    const req = extractRequirements('/v1/chat/completions', body as Record<string, unknown>);
    expect(req).toMatchObject({ vision: false, tools: false, jsonMode: false, estimatedTokens: 0 });
  });
});
