import fc from 'fast-check';
import { GatewayError, statusOf } from '../../common/gateway-error';
import type { ChatRequest, Json } from '../dialect-codec';
import { responsesCodec } from './codec';

function chat(body: Json, stream = false): ChatRequest {
  const out = responsesCodec.toChat(body, stream);
  if (out instanceof GatewayError) throw new Error(`unexpected refusal: ${out.message}`);
  return out;
}

function refusal(body: Json): GatewayError {
  const out = responsesCodec.toChat(body, false);
  if (!(out instanceof GatewayError)) throw new Error(`expected a refusal, got ${JSON.stringify(out.body)}`);
  return out;
}

describe('responses codec: request', () => {
  it('names its kind and the backend endpoint', () => {
    expect(responsesCodec.kind).toBe('openai-responses');
    expect(responsesCodec.endpoint).toBe('/v1/chat/completions');
  });

  it('maps a string input, instructions and the sampling settings', () => {
    const { body, dropped } = chat({
      model: 'm',
      instructions: 'Be brief.',
      input: 'Hi',
      max_output_tokens: 64,
      temperature: 0.2,
      top_p: 0.9,
      safety_identifier: 'u-1',
    });
    expect(body).toEqual({
      model: 'm',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi' },
      ],
      max_tokens: 64,
      temperature: 0.2,
      top_p: 0.9,
      user: 'u-1',
    });
    expect(dropped).toEqual([]);
  });

  it('asks a streamed answer for its usage', () => {
    expect(chat({ model: 'm', input: 'Hi', stream: true }, true).body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
  });

  it('maps message items: developer to system, text parts, images with their detail, image files', () => {
    const { body } = chat({
      model: 'm',
      input: [
        { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'Rules.' }] },
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'What is this?' },
            { type: 'input_image', image_url: 'https://img.example/a.png', detail: 'low' },
            { type: 'input_file', file_data: 'data:image/png;base64,AAAA', filename: 'b.png' },
          ],
        },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'A cat.' }] },
        { role: 'user', content: [{ type: 'input_text', text: 'Sure?' }] },
      ],
    });
    expect(body.messages).toEqual([
      { role: 'system', content: 'Rules.' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is this?' },
          { type: 'image_url', image_url: { url: 'https://img.example/a.png', detail: 'low' } },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
        ],
      },
      { role: 'assistant', content: 'A cat.' },
      { role: 'user', content: 'Sure?' },
    ]);
  });

  it('puts one turn’s text and calls in one assistant message, and outputs in tool messages', () => {
    const { body, dropped } = chat({
      model: 'm',
      input: [
        { role: 'user', content: 'Weather in Paris and Rome?' },
        { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'opaque' },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Checking.' }] },
        { type: 'function_call', call_id: 'call_a', name: 'weather', arguments: '{"city":"Paris"}' },
        { type: 'function_call', call_id: 'call_b', name: 'weather', arguments: '{"city":"Rome"}' },
        { type: 'function_call_output', call_id: 'call_a', output: 'sunny' },
        { type: 'function_call_output', call_id: 'call_b', output: [{ type: 'input_text', text: 'rain' }] },
      ],
    });
    expect(body.messages).toEqual([
      { role: 'user', content: 'Weather in Paris and Rome?' },
      {
        role: 'assistant',
        content: 'Checking.',
        tool_calls: [
          { id: 'call_a', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } },
          { id: 'call_b', type: 'function', function: { name: 'weather', arguments: '{"city":"Rome"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_a', content: 'sunny' },
      { role: 'tool', tool_call_id: 'call_b', content: 'rain' },
    ]);
    expect(dropped).toEqual(['input items of type reasoning']);
  });

  it('turns Codex’s freeform calls into calls of their one-string-parameter function, and local shell calls into function calls', () => {
    const { body } = chat({
      model: 'm',
      input: [
        { role: 'user', content: 'Patch it' },
        { type: 'custom_tool_call', call_id: 'call_p', name: 'apply_patch', input: '*** Begin Patch' },
        { type: 'custom_tool_call_output', call_id: 'call_p', output: 'Done' },
        { type: 'local_shell_call', call_id: 'call_s', status: 'completed', action: { type: 'exec', command: ['ls'] } },
        { type: 'function_call_output', call_id: 'call_s', output: 'a.txt' },
      ],
    });
    expect(body.messages).toEqual([
      { role: 'user', content: 'Patch it' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_p', type: 'function', function: { name: 'apply_patch', arguments: '{"input":"*** Begin Patch"}' } }],
      },
      { role: 'tool', tool_call_id: 'call_p', content: 'Done' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_s', type: 'function', function: { name: 'local_shell', arguments: '{"type":"exec","command":["ls"]}' } }],
      },
      { role: 'tool', tool_call_id: 'call_s', content: 'a.txt' },
    ]);
  });

  it('gives a tool output sent as an object to the model as its JSON text', () => {
    const { body } = chat({
      model: 'm',
      input: [
        { type: 'function_call', call_id: 'c1', name: 'f', arguments: '{}' },
        { type: 'function_call_output', call_id: 'c1', output: { ok: true } },
      ],
    });
    expect(body.messages).toContainEqual({ role: 'tool', tool_call_id: 'c1', content: '{"ok":true}' });
  });

  it('keeps function tools, flattens namespaces, sends custom tools as functions of one string and leaves hosted tools out', () => {
    const params = { type: 'object', properties: { cmd: { type: 'string' } }, required: ['cmd'] };
    const { body, dropped } = chat({
      model: 'm',
      input: 'go',
      tools: [
        { type: 'function', name: 'shell', description: 'Run a command', parameters: params, strict: false },
        { type: 'web_search' },
        { type: 'namespace', name: 'mcp__docs', description: 'Docs', tools: [{ type: 'function', name: 'search_docs', parameters: params }] },
        { type: 'custom', name: 'apply_patch', description: 'Edit files', format: { type: 'grammar' } },
      ],
      tool_choice: { type: 'function', name: 'shell' },
      parallel_tool_calls: false,
    });
    expect(body.tools).toEqual([
      { type: 'function', function: { name: 'shell', description: 'Run a command', parameters: params, strict: false } },
      { type: 'function', function: { name: 'search_docs', parameters: params } },
      {
        type: 'function',
        function: {
          name: 'apply_patch',
          description: 'Edit files',
          parameters: { type: 'object', properties: { input: { type: 'string' } }, required: ['input'] },
        },
      },
    ]);
    expect(body.tool_choice).toEqual({ type: 'function', function: { name: 'shell' } });
    expect(body.parallel_tool_calls).toBe(false);
    expect(dropped).toEqual(['tools[1] (type web_search)', 'tools[3].format']);
  });

  it.each([
    ['auto', 'auto'],
    ['none', 'none'],
    ['required', 'required'],
    [{ type: 'allowed_tools', mode: 'required', tools: [] }, 'required'],
  ])('maps tool_choice %j', (choice, expected) => {
    expect(chat({ model: 'm', input: 'x', tools: [{ type: 'function', name: 'f' }], tool_choice: choice }).body.tool_choice).toEqual(expected);
  });

  it('sends no tool_choice or parallel_tool_calls when no function tool is left (chat backends refuse them alone)', () => {
    const { body, dropped } = chat({ model: 'm', input: 'x', tools: [{ type: 'web_search_preview' }], tool_choice: 'required', parallel_tool_calls: true });
    expect(body).not.toHaveProperty('tools');
    expect(body).not.toHaveProperty('tool_choice');
    expect(body).not.toHaveProperty('parallel_tool_calls');
    expect(dropped).toContain('tool_choice (no function tools left)');
  });

  it('maps text.format to response_format', () => {
    const schema = { type: 'object', properties: { n: { type: 'number' } } };
    expect(chat({ model: 'm', input: 'x', text: { format: { type: 'json_schema', name: 'num', schema, strict: true } } }).body.response_format).toEqual({
      type: 'json_schema',
      json_schema: { name: 'num', schema, strict: true },
    });
    expect(chat({ model: 'm', input: 'x', text: { format: { type: 'json_object' } } }).body.response_format).toEqual({ type: 'json_object' });
    expect(chat({ model: 'm', input: 'x', text: { format: { type: 'text' } } }).body).not.toHaveProperty('response_format');
  });

  it('translates what Codex sends, dropping what chat has no place for', () => {
    const { body, dropped } = chat(
      {
        model: 'gpt-5-codex',
        instructions: 'You are Codex.',
        input: [
          { type: 'message', role: 'developer', content: [{ type: 'input_text', text: '<permissions>' }] },
          { type: 'message', role: 'user', content: [{ type: 'input_text', text: '<environment_context>' }] },
          { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'write hello.txt' }] },
        ],
        tools: [{ type: 'function', name: 'shell', description: 'Runs a shell command', strict: false, parameters: { type: 'object', properties: {} } }],
        tool_choice: 'auto',
        parallel_tool_calls: false,
        reasoning: { effort: 'medium', summary: 'auto' },
        store: false,
        stream: true,
        include: ['reasoning.encrypted_content'],
        prompt_cache_key: 'conv-1',
        client_metadata: { session: 's' },
        service_tier: 'auto',
        text: { verbosity: 'low' },
      },
      true,
    );
    expect(body.messages).toEqual([
      { role: 'system', content: 'You are Codex.\n\n<permissions>' },
      { role: 'user', content: '<environment_context>' },
      { role: 'user', content: 'write hello.txt' },
    ]);
    expect(body.reasoning_effort).toBe('medium');
    expect(body.tool_choice).toBe('auto');
    expect(dropped.sort()).toEqual(['client_metadata', 'include', 'prompt_cache_key', 'reasoning.summary', 'service_tier', 'text.verbosity'].sort());
  });

  it('refuses previous_response_id with a 400 that says what to do instead', () => {
    const error = refusal({ model: 'm', input: 'again', previous_response_id: 'resp_1' });
    expect(error.code).toBe('invalid_request');
    expect(statusOf(error.code)).toBe(400);
    expect(error.message).toBe('previous_response_id is not supported: this gateway does not store responses; send the full conversation in input');
    expect(error.details.param).toBe('previous_response_id');
  });

  it.each([
    [{ model: 'm' }, 'input is required'],
    [{ model: 'm', input: 42 }, 'input must be a string or an array'],
    [{ model: 'm', input: [null] }, 'input[0] must be an object'],
    [{ model: 'm', input: [{ role: 'robot', content: 'x' }] }, 'input[0].role must be one of'],
    [{ model: 'm', input: [{ type: 'function_call', name: 'f', arguments: '{}' }] }, 'input[0].call_id'],
    [{ model: 'm', input: 'x', temperature: 'hot' }, 'temperature must be a number'],
    [{ model: 'm', input: 'x', text: { format: { type: 'json_schema', schema: {} } } }, 'needs a name'],
    [{ model: 'm', input: [{ type: 'item_reference', id: 'msg_1' }] }, 'item_reference is not supported'],
    [{ model: 'm', input: 'x', conversation: 'conv_1' }, 'conversation is not supported'],
  ])('refuses %j with a clear 400', (body, message) => {
    const error = refusal(body);
    expect(statusOf(error.code)).toBe(400);
    expect(error.message).toContain(message);
  });

  it('never throws, whatever the body', () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.constantFrom('input', 'tools', 'tool_choice', 'text', 'reasoning', 'instructions', 'temperature'), fc.jsonValue()),
        (body) => {
          const out = responsesCodec.toChat({ model: 'm', ...body }, true);
          expect(out instanceof GatewayError || Array.isArray(out.body.messages)).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
    const item = fc.record(
      {
        type: fc.constantFrom('message', 'function_call', 'function_call_output', 'custom_tool_call', 'local_shell_call', 'reasoning'),
        role: fc.constantFrom('user', 'assistant', 'developer', 'system'),
        content: fc.oneof(fc.string(), fc.array(fc.record({ type: fc.constantFrom('input_text', 'input_image', 'input_file'), text: fc.jsonValue() }))),
        call_id: fc.oneof(fc.string(), fc.jsonValue()),
        name: fc.jsonValue(),
        arguments: fc.jsonValue(),
        output: fc.jsonValue(),
        action: fc.jsonValue(),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(fc.array(item), (input) => {
        const out = responsesCodec.toChat({ model: 'm', input }, false);
        expect(out instanceof GatewayError || Array.isArray(out.body.messages)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});
