import Anthropic from '@anthropic-ai/sdk';
import type { MessageParam, Tool } from '@anthropic-ai/sdk/resources/messages';
import { chatAnswer, chatError, chatStream } from './support/anthropic-chat-backend';
import { AnthropicRig, CLIENT_MODEL, startAnthropicRig } from './support/anthropic-rig';

/**
 * Claude-style clients on a backend that speaks only chat completions: the official Anthropic SDK
 * against a real gateway whose one real worker (a daemon) fronts a scripted chat-completions
 * backend. The gateway translates each request to chat and each answer back.
 */
describe('Anthropic SDK through translation to chat completions', () => {
  let rig: AnthropicRig;

  beforeEach(async () => {
    rig = await startAnthropicRig();
  });

  afterEach(async () => {
    await rig.close();
  });

  const writeFile: Tool = {
    name: 'write_file',
    description: 'Write a file',
    input_schema: { type: 'object', properties: { path: { type: 'string' }, content: { type: 'string' } }, required: ['path', 'content'] },
  };
  const args = JSON.stringify({ path: 'notes/hello.txt', content: 'Grüße 👋 "quoted"' });

  it('answers messages.create with the backend text, the client model and usage, marked as translated', async () => {
    rig.backend.enqueue(chatAnswer({ content: 'Bonjour from chat', finish: 'stop', usage: { prompt: 14, completion: 3 } }));
    const { data, response } = await rig.client.messages
      .create({ model: CLIENT_MODEL, max_tokens: 64, system: 'Be brief.', messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    expect(response.headers.get('x-switchboard-translated')).toBe('anthropic-messages');
    expect(data).toMatchObject({
      type: 'message',
      role: 'assistant',
      model: CLIENT_MODEL,
      content: [{ type: 'text', text: 'Bonjour from chat' }],
      stop_reason: 'end_turn',
      usage: { input_tokens: 14, output_tokens: 3 },
    });
    expect(data.id).toMatch(/^msg_/);
    const { request, body } = await rig.received(1);
    expect(request.path).toBe('/v1/chat/completions');
    expect(body.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'hi' },
    ]);
    expect(body.max_tokens).toBe(64);
  });

  it('runs a full tool-use round trip with messages.create', async () => {
    const history: MessageParam[] = [{ role: 'user', content: 'Write a greeting to notes/hello.txt' }];
    rig.backend.enqueue(chatAnswer({ content: 'Writing it.', toolCalls: [{ id: 'call_w1', name: 'write_file', arguments: args }], finish: 'tool_calls' }));
    const first = await rig.client.messages.create({
      model: CLIENT_MODEL,
      max_tokens: 256,
      tools: [writeFile],
      tool_choice: { type: 'auto' },
      messages: history,
    });
    expect(first.stop_reason).toBe('tool_use');
    const call = first.content.find((b) => b.type === 'tool_use');
    expect(call).toMatchObject({ type: 'tool_use', id: 'call_w1', name: 'write_file', input: JSON.parse(args) });

    rig.backend.enqueue(chatAnswer({ content: 'Done: the file is written.', finish: 'stop' }));
    history.push({ role: 'assistant', content: first.content });
    history.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_w1', content: 'wrote 24 bytes' }] });
    const second = await rig.client.messages.create({ model: CLIENT_MODEL, max_tokens: 256, tools: [writeFile], messages: history });
    expect(second).toMatchObject({ stop_reason: 'end_turn', content: [{ type: 'text', text: 'Done: the file is written.' }] });

    const turn1 = (await rig.received(1)).body;
    expect(turn1.tools).toEqual([{ type: 'function', function: { name: 'write_file', description: 'Write a file', parameters: writeFile.input_schema } }]);
    expect(turn1.tool_choice).toBe('auto');
    const turn2 = (await rig.received(2)).body;
    expect(turn2.messages).toEqual([
      { role: 'user', content: 'Write a greeting to notes/hello.txt' },
      { role: 'assistant', content: 'Writing it.', tool_calls: [{ id: 'call_w1', type: 'function', function: { name: 'write_file', arguments: args } }] },
      { role: 'tool', tool_call_id: 'call_w1', content: 'wrote 24 bytes' },
    ]);
  });

  it('runs the same round trip with messages.stream, each answer also through finalMessage()', async () => {
    const history: MessageParam[] = [{ role: 'user', content: 'Write a greeting' }];
    rig.backend.enqueue(chatStream({ content: 'Sure — writing.', toolCalls: [{ name: 'write_file', arguments: args }], finish: 'tool_calls' }));
    const stream = rig.client.messages.stream({ model: CLIENT_MODEL, max_tokens: 256, tools: [writeFile], messages: history });
    const { response } = await stream.withResponse();
    expect(response.headers.get('x-switchboard-translated')).toBe('anthropic-messages');
    const types: string[] = [];
    let json = '';
    stream.on('streamEvent', (event) => types.push(event.type));
    stream.on('inputJson', (delta) => (json += delta));
    const first = await stream.finalMessage();
    expect(types[0]).toBe('message_start');
    expect(types.slice(-2)).toEqual(['message_delta', 'message_stop']);
    expect(json).toBe(args);
    expect(first.stop_reason).toBe('tool_use');
    expect(first.usage).toMatchObject({ input_tokens: 21, output_tokens: 9 });
    expect(first.content).toEqual([
      { type: 'text', text: 'Sure — writing.' },
      { type: 'tool_use', id: 'call_0', name: 'write_file', input: JSON.parse(args) },
    ]);
    const sent = (await rig.received(1)).body;
    expect(sent).toMatchObject({ stream: true, stream_options: { include_usage: true } });

    rig.backend.enqueue(chatStream({ content: 'All done.', finish: 'stop' }));
    history.push({ role: 'assistant', content: first.content });
    history.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_0', content: 'permission denied', is_error: true }] });
    const second = await rig.client.messages.stream({ model: CLIENT_MODEL, max_tokens: 256, tools: [writeFile], messages: history }).finalMessage();
    expect(second).toMatchObject({ stop_reason: 'end_turn', content: [{ type: 'text', text: 'All done.' }] });
    expect((await rig.received(2)).body.messages.at(-1)).toEqual({ role: 'tool', tool_call_id: 'call_0', content: 'Error: permission denied' });
  });

  it('sends images as image_url parts', async () => {
    rig.backend.enqueue(chatAnswer({ content: 'A red pixel and a cat.', finish: 'stop' }));
    const pixel = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
    const answer = await rig.client.messages.create({
      model: CLIENT_MODEL,
      max_tokens: 64,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: pixel } },
            { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
            { type: 'text', text: 'What do you see?' },
          ],
        },
      ],
    });
    expect(answer.content).toEqual([{ type: 'text', text: 'A red pixel and a cat.' }]);
    expect((await rig.received(1)).body.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'image_url', image_url: { url: `data:image/png;base64,${pixel}` } },
          { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg' } },
          { type: 'text', text: 'What do you see?' },
        ],
      },
    ]);
  });

  it('passes stop sequences and names the one that stopped the answer, whole and streamed', async () => {
    rig.backend.enqueue(chatAnswer({ content: 'one two', finish: 'stop', choiceExtra: { stop_reason: 'THREE' } }));
    const whole = await rig.client.messages.create({
      model: CLIENT_MODEL,
      max_tokens: 64,
      stop_sequences: ['THREE'],
      messages: [{ role: 'user', content: 'count' }],
    });
    expect(whole).toMatchObject({ stop_reason: 'stop_sequence', stop_sequence: 'THREE' });
    expect((await rig.received(1)).body.stop).toEqual(['THREE']);

    rig.backend.enqueue(chatStream({ content: 'one two', finish: 'stop', choiceExtra: { stopping_word: 'THREE' } }));
    const streamed = await rig.client.messages
      .stream({ model: CLIENT_MODEL, max_tokens: 64, stop_sequences: ['THREE'], messages: [{ role: 'user', content: 'count' }] })
      .finalMessage();
    expect(streamed).toMatchObject({ stop_reason: 'stop_sequence', stop_sequence: 'THREE', content: [{ type: 'text', text: 'one two' }] });

    rig.backend.enqueue(chatStream({ content: 'cut', finish: 'length' }));
    const cut = await rig.client.messages.stream({ model: CLIENT_MODEL, max_tokens: 1, messages: [{ role: 'user', content: 'long' }] }).finalMessage();
    expect(cut.stop_reason).toBe('max_tokens');
  });

  it("answers a backend 400 as the SDK's BadRequestError in Anthropic's error shape, whole and streamed", async () => {
    rig.backend.enqueue(chatError(400, 'the prompt is too long for the context window'));
    const whole = await rig.client.messages
      .create({ model: CLIENT_MODEL, max_tokens: 64, messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    expect(whole).toBeInstanceOf(Anthropic.BadRequestError);
    expect((whole as InstanceType<typeof Anthropic.BadRequestError>).error).toMatchObject({
      type: 'error',
      error: { type: 'invalid_request_error', message: 'the prompt is too long for the context window' },
    });

    expect((whole as InstanceType<typeof Anthropic.BadRequestError>).headers.get('x-switchboard-translated')).toBe('anthropic-messages');

    rig.backend.enqueue(chatError(400, 'bad stream request'));
    const streamed = await rig.client.messages
      .stream({ model: CLIENT_MODEL, max_tokens: 64, messages: [{ role: 'user', content: 'x' }] })
      .finalMessage()
      .catch((e: unknown) => e);
    expect(streamed).toBeInstanceOf(Anthropic.BadRequestError);
    expect((streamed as InstanceType<typeof Anthropic.BadRequestError>).error).toMatchObject({
      error: { type: 'invalid_request_error', message: 'bad stream request' },
    });

    rig.backend.enqueue(chatError(503, 'model is loading'));
    const overloaded = await rig.client.messages
      .create({ model: CLIENT_MODEL, max_tokens: 64, messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    expect(overloaded).toBeInstanceOf(Anthropic.APIError);
    expect((overloaded as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({ error: { type: 'overloaded_error' } });
  });

  it('translates what Claude Code sends (system entries, adaptive thinking, server tools, cache_control) and gives thinking back', async () => {
    rig.backend.enqueue(
      chatStream({
        reasoning: 'The user wants a listing.',
        content: 'Listing now.',
        toolCalls: [{ name: 'Bash', arguments: '{"command":"ls"}' }],
        finish: 'tool_calls',
      }),
    );
    const bash: Tool = { name: 'Bash', description: 'Run a command', input_schema: { type: 'object', properties: { command: { type: 'string' } } } };
    // Fields this SDK version does not declare, as Claude Code sends them.
    const claudeCode = {
      model: CLIENT_MODEL,
      max_tokens: 32000,
      system: [{ type: 'text', text: 'You are Claude Code.', cache_control: { type: 'ephemeral' } }],
      messages: [
        { role: 'system', content: 'Leading note.' },
        { role: 'user', content: [{ type: 'text', text: 'list files', cache_control: { type: 'ephemeral' } }] },
      ],
      thinking: { type: 'adaptive' },
      context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
      output_config: { effort: 'medium' },
      metadata: { user_id: 'user_1_session_2' },
      tools: [
        { ...bash, defer_loading: false },
        { type: 'web_search_20250305', name: 'web_search', max_uses: 5 },
      ],
    } as unknown as Parameters<typeof rig.client.messages.stream>[0];
    const answer = await rig.client.messages.stream(claudeCode).finalMessage();
    expect(answer.content).toEqual([
      { type: 'thinking', thinking: 'The user wants a listing.', signature: '' },
      { type: 'text', text: 'Listing now.' },
      { type: 'tool_use', id: 'call_0', name: 'Bash', input: { command: 'ls' } },
    ]);
    const sent = (await rig.received(1)).body;
    expect(sent.messages).toEqual([
      { role: 'system', content: 'You are Claude Code.\n\nLeading note.' },
      { role: 'user', content: 'list files' },
    ]);
    expect(sent).toMatchObject({ chat_template_kwargs: { enable_thinking: true }, reasoning_effort: 'medium', user: 'user_1_session_2', max_tokens: 32000 });
    expect(sent.tools).toEqual([{ type: 'function', function: { name: 'Bash', description: 'Run a command', parameters: bash.input_schema } }]);
    for (const dropped of ['context_management', 'output_config', 'cache_control', 'defer_loading', 'web_search'])
      expect(JSON.stringify(sent)).not.toContain(dropped);
  });
});
