import { GatewayError } from '../../common/gateway-error';
import type { ChatRequest, Json } from '../dialect-codec';
import { anthropicCodec } from './anthropic.codec';

function translate(body: Json, stream = false): ChatRequest {
  const result = anthropicCodec.toChat(body, stream);
  if (result instanceof GatewayError) throw result;
  return result;
}

const base = { model: 'claude-sonnet-4-5', max_tokens: 256 };

describe('anthropicCodec.toChat', () => {
  it('names its kind and the chat endpoint', () => {
    expect(anthropicCodec.kind).toBe('anthropic-messages');
    expect(anthropicCodec.endpoint).toBe('/v1/chat/completions');
  });

  it('maps system (string or blocks), text turns and sampling fields', () => {
    const { body, dropped } = translate({
      ...base,
      system: [
        { type: 'text', text: 'You are terse.', cache_control: { type: 'ephemeral' } },
        { type: 'text', text: 'Answer in French.' },
      ],
      messages: [
        { role: 'user', content: 'Bonjour' },
        { role: 'assistant', content: [{ type: 'text', text: 'Salut' }] },
        { role: 'user', content: [{ type: 'text', text: 'Ça va ?' }] },
      ],
      stop_sequences: ['END', ''],
      temperature: 0.2,
      top_p: 0.9,
      top_k: 40,
      metadata: { user_id: 'u-42' },
    });
    expect(body).toEqual({
      model: 'claude-sonnet-4-5',
      messages: [
        { role: 'system', content: 'You are terse.\n\nAnswer in French.' },
        { role: 'user', content: 'Bonjour' },
        { role: 'assistant', content: 'Salut' },
        { role: 'user', content: 'Ça va ?' },
      ],
      max_tokens: 256,
      temperature: 0.2,
      top_p: 0.9,
      top_k: 40,
      stop: ['END'],
      user: 'u-42',
      // No `thinking`: none, as on Anthropic's side (Qwen3-style templates would think by default).
      chat_template_kwargs: { enable_thinking: false },
    });
    expect(dropped).toEqual(['cache_control']);
    expect(translate({ ...base, system: 'Be brief.', messages: [] }).body.messages).toEqual([{ role: 'system', content: 'Be brief.' }]);
  });

  it('asks a streaming backend for usage', () => {
    const { body } = translate({ ...base, stream: true, messages: [{ role: 'user', content: 'hi' }] }, true);
    expect(body.stream).toBe(true);
    expect(body.stream_options).toEqual({ include_usage: true });
  });

  it('turns base64 and URL images into image_url parts', () => {
    const { body } = translate({
      ...base,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: 'AAAA' } },
            { type: 'image', source: { type: 'url', url: 'https://example.com/cat.png' } },
            { type: 'text', text: 'What are these?' },
          ],
        },
      ],
    });
    expect(body.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'image_url', image_url: { url: 'data:image/jpeg;base64,AAAA' } },
          { type: 'image_url', image_url: { url: 'https://example.com/cat.png' } },
          { type: 'text', text: 'What are these?' },
        ],
      },
    ]);
  });

  it('keeps tool ids across tool_use and tool_result, and says when a tool failed', () => {
    const { body } = translate({
      ...base,
      messages: [
        { role: 'user', content: 'Weather in Paris and Oslo?' },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'two calls', signature: 'sig' },
            { type: 'tool_use', id: 'toolu_1', name: 'weather', input: { city: 'Paris' } },
            { type: 'tool_use', id: 'toolu_2', name: 'weather', input: { city: 'Oslo' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: '18°C' },
            { type: 'tool_result', tool_use_id: 'toolu_2', content: [{ type: 'text', text: 'station offline' }], is_error: true },
            { type: 'text', text: 'Thanks' },
          ],
        },
      ],
    });
    expect(body.messages).toEqual([
      { role: 'user', content: 'Weather in Paris and Oslo?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'toolu_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } },
          { id: 'toolu_2', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'toolu_1', content: '18°C' },
      { role: 'tool', tool_call_id: 'toolu_2', content: 'Error: station offline' },
      { role: 'user', content: 'Thanks' },
    ]);
  });

  it('moves images of a tool result to a user message after the tool message', () => {
    const { body } = translate({
      ...base,
      messages: [
        {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: 't1',
              content: [
                { type: 'text', text: 'screenshot:' },
                { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'QQ==' } },
              ],
            },
          ],
        },
      ],
    });
    expect(body.messages).toEqual([
      { role: 'tool', tool_call_id: 't1', content: 'screenshot:' },
      { role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,QQ==' } }] },
    ]);
  });

  it('maps custom tools and every tool_choice, leaving server tools out', () => {
    const schema = { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] };
    const tools = [
      { name: 'read_file', description: 'Read a file', input_schema: schema, cache_control: { type: 'ephemeral' }, defer_loading: true },
      { type: 'web_search_20250305', name: 'web_search', max_uses: 3 },
      { type: 'bash_20250124', name: 'bash' },
      { type: 'text_editor_20250728', name: 'str_replace_based_edit_tool' },
    ];
    const choices: [unknown, unknown][] = [
      [{ type: 'auto' }, 'auto'],
      [{ type: 'any' }, 'required'],
      [{ type: 'none' }, 'none'],
      [
        { type: 'tool', name: 'read_file' },
        { type: 'function', function: { name: 'read_file' } },
      ],
    ];
    for (const [choice, expected] of choices) {
      const { body, dropped } = translate({ ...base, messages: [{ role: 'user', content: 'x' }], tools, tool_choice: choice });
      expect(body.tools).toEqual([{ type: 'function', function: { name: 'read_file', description: 'Read a file', parameters: schema } }]);
      expect(body.tool_choice).toEqual(expected);
      expect(dropped).toEqual(
        expect.arrayContaining([
          'tools.1 (web_search_20250305: not a custom tool)',
          'tools.2 (bash_20250124: not a custom tool)',
          'tools.3 (text_editor_20250728: not a custom tool)',
          'tools[].defer_loading',
        ]),
      );
    }
    const { body } = translate({ ...base, messages: [], tools, tool_choice: { type: 'auto', disable_parallel_tool_use: true } });
    expect(body.parallel_tool_calls).toBe(false);
    const onlyServer = translate({ ...base, messages: [], tools: tools.slice(1), tool_choice: { type: 'any' } });
    expect(onlyServer.body.tools).toBeUndefined();
    expect(onlyServer.body.tool_choice).toBeUndefined();
  });

  it('maps thinking to the reasoning switches and never refuses it', () => {
    const msg = { ...base, messages: [{ role: 'user', content: 'x' }] };
    expect(translate({ ...msg, thinking: { type: 'enabled', budget_tokens: 2048 } }).body).toMatchObject({
      chat_template_kwargs: { enable_thinking: true },
      reasoning_effort: 'low',
    });
    expect(translate({ ...msg, thinking: { type: 'enabled', budget_tokens: 10000 } }).body.reasoning_effort).toBe('medium');
    expect(translate({ ...msg, thinking: { type: 'enabled', budget_tokens: 32000 } }).body.reasoning_effort).toBe('high');
    const adaptive = translate({ ...msg, thinking: { type: 'adaptive' } }).body;
    expect(adaptive.chat_template_kwargs).toEqual({ enable_thinking: true });
    expect(adaptive.reasoning_effort).toBeUndefined();
    expect(translate({ ...msg, thinking: { type: 'adaptive' }, output_config: { effort: 'max' } }).body.reasoning_effort).toBe('high');
    expect(translate({ ...msg, thinking: { type: 'disabled' } }).body.chat_template_kwargs).toEqual({ enable_thinking: false });
    const odd = translate({ ...msg, thinking: { type: 'sometimes' } });
    expect(odd.body.chat_template_kwargs).toBeUndefined();
    expect(odd.dropped).toContain('thinking sometimes');
  });

  it('translates what Claude Code really sends without error, naming what it drops', () => {
    const { body, dropped } = translate(
      {
        model: 'claude-opus-4-5',
        max_tokens: 32000,
        stream: true,
        system: [{ type: 'text', text: "You are Claude Code, Anthropic's official CLI for Claude.", cache_control: { type: 'ephemeral' } }],
        messages: [
          { role: 'system', content: 'Leading note.' },
          {
            role: 'user',
            content: [
              { type: 'text', text: '<system-reminder>ctx</system-reminder>' },
              { type: 'text', text: 'fix the bug', cache_control: { type: 'ephemeral' } },
              { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'file body' }, title: 'notes.txt' },
              { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBER' } },
            ],
          },
          {
            role: 'assistant',
            content: [
              { type: 'redacted_thinking', data: 'xyz' },
              { type: 'text', text: 'Looking.' },
            ],
          },
          { role: 'system', content: [{ type: 'text', text: 'Mid-conversation note.' }] },
          { role: 'user', content: 'go on' },
        ],
        thinking: { type: 'adaptive' },
        context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
        output_config: { effort: 'high' },
        metadata: { user_id: 'user_abc_account_x_session_y' },
        tools: [{ name: 'Bash', description: 'Run', input_schema: { type: 'object', properties: {} }, defer_loading: false }],
      },
      true,
    );
    expect(body.messages).toEqual([
      { role: 'system', content: "You are Claude Code, Anthropic's official CLI for Claude.\n\nLeading note." },
      { role: 'user', content: '<system-reminder>ctx</system-reminder>\nfix the bug\nnotes.txt\n\nfile body' },
      { role: 'assistant', content: 'Looking.' },
      { role: 'user', content: '<system-reminder>\nMid-conversation note.\n</system-reminder>\n\ngo on' },
    ]);
    expect(body).toMatchObject({ reasoning_effort: 'high', user: 'user_abc_account_x_session_y', max_tokens: 32000 });
    expect(dropped).toEqual(
      expect.arrayContaining([
        'context_management',
        'cache_control',
        'document source base64',
        'assistant content block redacted_thinking',
        'tools[].defer_loading',
      ]),
    );
  });

  it('maps output_config.format to response_format', () => {
    const schema = { type: 'object', properties: { a: { type: 'number' } } };
    const { body } = translate({ ...base, messages: [], output_config: { format: { type: 'json_schema', schema } } });
    expect(body.response_format).toEqual({ type: 'json_schema', json_schema: { name: 'output', schema } });
  });

  it('refuses bodies whose structure is wrong, with invalid_request naming the field', () => {
    const cases: [Json, string][] = [
      [{ ...base }, 'messages'],
      [{ ...base, messages: 'hi' }, 'messages'],
      [{ ...base, messages: [null] }, 'messages.0'],
      [{ ...base, messages: [{ role: 'tool', content: 'x' }] }, 'messages.0.role'],
      [{ ...base, messages: [{ role: 'user', content: 42 }] }, 'messages.0.content'],
    ];
    for (const [body, param] of cases) {
      const result = anthropicCodec.toChat(body, false);
      expect(result).toBeInstanceOf(GatewayError);
      expect((result as GatewayError).code).toBe('invalid_request');
      expect((result as GatewayError).details.param).toBe(param);
    }
  });

  it('survives garbage inside a well-formed body (drops it, never throws)', () => {
    const { body, dropped } = translate({
      ...base,
      system: 7,
      messages: [{ role: 'user', content: [null, 3, { type: 'image', source: { type: 'file', file_id: 'f' } }, { type: 'text', text: 'ok' }] }],
      tools: 'nope',
      tool_choice: 'auto',
      temperature: 'hot',
      stop_sequences: [1, 'X'],
    });
    expect(body.messages).toEqual([{ role: 'user', content: 'ok' }]);
    expect(body.stop).toEqual(['X']);
    expect(body.temperature).toBeUndefined();
    expect(dropped).toEqual(
      expect.arrayContaining(['system (not a string or blocks)', 'image source file', 'tools (not an array)', 'temperature (not a number)']),
    );
  });
});
