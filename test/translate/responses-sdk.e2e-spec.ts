import OpenAI from 'openai';
import { chatCompletion, chatStream, received, ResponsesEnv, startResponsesEnv } from './support/responses-env';

const weatherTool = {
  type: 'function' as const,
  name: 'get_weather',
  description: 'Current weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
  strict: true,
};

/**
 * The `openai` SDK's Responses API against a worker whose backend serves only chat completions: the
 * gateway translates both ways and says so in `x-switchboard-translated`.
 */
describe('Responses API through a chat-completions-only worker (openai SDK)', () => {
  let env: ResponsesEnv;

  beforeAll(async () => {
    env = await startResponsesEnv({ chatOnly: true });
  });

  afterAll(async () => {
    await env?.close();
  });

  /** The chat requests the backend received since `from`. */
  const since = (from: number) => received(env.backend).slice(from);

  it('answers responses.create, naming the client’s model and the backend’s usage', async () => {
    env.backend.enqueue({ kind: 'status', status: 200, body: chatCompletion({ content: 'Hello from chat.' }, 'stop') });
    const from = env.backend.relayed.length;
    const { data, response } = await env.openai.responses
      .create({ model: 'llama3', instructions: 'Be brief.', input: 'Hi', max_output_tokens: 50, temperature: 0.3 })
      .withResponse();
    expect(response.headers.get('x-switchboard-translated')).toBe('openai-responses');
    expect(data.output_text).toBe('Hello from chat.');
    expect(data).toMatchObject({ object: 'response', status: 'completed', model: 'llama3', instructions: 'Be brief.', created_at: 1_700_000_000 });
    expect(data.id).toMatch(/^resp_/);
    expect(data.usage).toMatchObject({ input_tokens: 20, output_tokens: 8, total_tokens: 28 });
    // Operators see it: the request is counted as translated, by kind and pool.
    const metrics = await (await fetch(`${env.gw.url}/metrics`)).text();
    expect(metrics).toMatch(/^switchboard_translated_requests_total\{kind="openai-responses",provider="[^"]+"\} [1-9]/m);
    expect(since(from)).toEqual([
      {
        path: '/v1/chat/completions',
        body: {
          model: 'llama3',
          messages: [
            { role: 'system', content: 'Be brief.' },
            { role: 'user', content: 'Hi' },
          ],
          max_tokens: 50,
          temperature: 0.3,
        },
      },
    ]);
  });

  it('runs a function-call round trip, whole answers', async () => {
    const from = env.backend.relayed.length;
    env.backend.enqueue({
      kind: 'status',
      status: 200,
      body: chatCompletion(
        { content: null, tool_calls: [{ id: 'call_w1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
        'tool_calls',
      ),
    });
    const first = await env.openai.responses.create({ model: 'llama3', input: 'Weather in Paris?', tools: [weatherTool] });
    const call = first.output.find((item) => item.type === 'function_call');
    expect(call).toMatchObject({ type: 'function_call', call_id: 'call_w1', name: 'get_weather', arguments: '{"city":"Paris"}' });

    env.backend.enqueue({ kind: 'status', status: 200, body: chatCompletion({ content: 'It is 21 °C in Paris.' }, 'stop') });
    const second = await env.openai.responses.create({
      model: 'llama3',
      tools: [weatherTool],
      input: [
        { role: 'user', content: 'Weather in Paris?' },
        ...first.output,
        { type: 'function_call_output', call_id: 'call_w1', output: '{"temp_c":21}' },
      ] as any,
    });
    expect(second.output_text).toBe('It is 21 °C in Paris.');

    const [turn1, turn2] = since(from);
    expect(turn1.body.tools).toEqual([
      { type: 'function', function: { name: 'get_weather', description: 'Current weather in a city', parameters: weatherTool.parameters, strict: true } },
    ]);
    expect(turn2.body.messages).toEqual([
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_w1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
      { role: 'tool', tool_call_id: 'call_w1', content: '{"temp_c":21}' },
    ]);
  });

  it('runs a function-call round trip streamed: responses.stream().finalResponse(), then responses.create({stream: true}) iterated', async () => {
    const from = env.backend.relayed.length;
    env.backend.enqueue({
      kind: 'raw-stream',
      pieces: chatStream(
        [
          { role: 'assistant', content: '' },
          { tool_calls: [{ index: 0, id: 'call_s1', type: 'function', function: { name: 'get_weather', arguments: '' } }] },
          { tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] },
          { tool_calls: [{ index: 0, function: { arguments: '"Rome"}' } }] },
        ],
        'tool_calls',
      ),
      delayMs: 0,
      then: 'end',
    });
    const argDeltas: string[] = [];
    const stream = env.openai.responses
      .stream({ model: 'llama3', input: 'Weather in Rome?', tools: [weatherTool] })
      .on('response.function_call_arguments.delta', (e) => argDeltas.push(e.delta));
    const first = await stream.finalResponse();
    expect(argDeltas.join('')).toBe('{"city":"Rome"}');
    expect(first.status).toBe('completed');
    expect(first.usage?.total_tokens).toBe(28);
    const call = first.output.find((item) => item.type === 'function_call');
    expect(call).toMatchObject({ call_id: 'call_s1', name: 'get_weather', arguments: '{"city":"Rome"}', status: 'completed' });

    env.backend.enqueue({
      kind: 'raw-stream',
      pieces: chatStream([{ role: 'assistant', content: '' }, { content: 'Sunny, ' }, { content: '24 °C 🌞.' }], 'stop'),
      delayMs: 0,
      then: 'end',
    });
    const { data: events, response } = await env.openai.responses
      .create({
        model: 'llama3',
        stream: true,
        tools: [weatherTool],
        input: [
          { role: 'user', content: 'Weather in Rome?' },
          ...first.output,
          { type: 'function_call_output', call_id: 'call_s1', output: 'sunny, 24' },
        ] as any,
      })
      .withResponse();
    expect(response.headers.get('x-switchboard-translated')).toBe('openai-responses');
    let text = '';
    const types: string[] = [];
    let sequence = -1;
    for await (const event of events) {
      types.push(event.type);
      expect(event.sequence_number).toBe(sequence + 1);
      sequence = event.sequence_number;
      if (event.type === 'response.output_text.delta') text += event.delta;
      if (event.type === 'response.completed') expect(event.response.usage?.output_tokens).toBe(8);
    }
    expect(text).toBe('Sunny, 24 °C 🌞.');
    expect(types[0]).toBe('response.created');
    expect(types[types.length - 1]).toBe('response.completed');

    const [turn1, turn2] = since(from);
    expect(turn1.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    expect(turn2.body.messages).toEqual([
      { role: 'user', content: 'Weather in Rome?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_s1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Rome"}' } }] },
      { role: 'tool', tool_call_id: 'call_s1', content: 'sunny, 24' },
    ]);
  });

  it('refuses previous_response_id with a 400 BadRequestError that says what to do, without calling the backend', async () => {
    const from = env.backend.relayed.length;
    const error = await env.openai.responses.create({ model: 'llama3', input: 'And then?', previous_response_id: 'resp_earlier' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).message).toContain(
      'previous_response_id is not supported: this gateway does not store responses; send the full conversation in input',
    );
    expect(since(from)).toEqual([]);
  });

  it('sends text.format json_schema as response_format', async () => {
    const from = env.backend.relayed.length;
    env.backend.enqueue({ kind: 'status', status: 200, body: chatCompletion({ content: '{"city":"Oslo","temp_c":-3}' }, 'stop') });
    const schema = {
      type: 'object',
      properties: { city: { type: 'string' }, temp_c: { type: 'number' } },
      required: ['city', 'temp_c'],
      additionalProperties: false,
    };
    const answer = await env.openai.responses.create({
      model: 'llama3',
      input: 'Weather in Oslo as JSON',
      text: { format: { type: 'json_schema', name: 'weather', schema, strict: true } },
    });
    expect(JSON.parse(answer.output_text)).toEqual({ city: 'Oslo', temp_c: -3 });
    expect(since(from)[0].body.response_format).toEqual({ type: 'json_schema', json_schema: { name: 'weather', schema, strict: true } });
  });

  it('turns a backend error into the SDK’s error, with the backend’s message', async () => {
    env.backend.enqueue({
      kind: 'status',
      status: 400,
      body: JSON.stringify({ object: 'error', message: "This model's maximum context length is 4096 tokens", type: 'BadRequestError', param: null, code: 400 }),
    });
    const error = await env.openai.responses.create({ model: 'llama3', input: 'a very long prompt' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).message).toContain("This model's maximum context length is 4096 tokens");
  });
});
