import Anthropic from '@anthropic-ai/sdk';
import { TEST_ADMIN_TOKEN, TestGateway } from '../support/gateway';
import { admin, eventually } from '../support/http';
import { ScriptedWorker } from '../support/scripted-worker';
import { itWithLogs as it, withGatewayLogs } from './support/gateway-process';
import { describeWithPostgres } from './support/postgres';
import { Replicas, startReplicas } from './support/replicas';

const WAIT = 15_000;

/** The Anthropic dialect through another replica (issue 18, "Any request, any replica"): the official SDK on one replica process, the worker on the other. */
describeWithPostgres('cluster mode: Anthropic clients on any replica', () => {
  let replicas: Replicas;
  let gw: TestGateway[] = [];
  const workers: ScriptedWorker[] = [];

  /** A worker at the first replica, seen by the second before the test goes on. */
  async function worker(model: string, endpoints: string[]): Promise<ScriptedWorker> {
    const { worker: w } = await ScriptedWorker.register(gw[0].workerUrl, { models: [model], endpoints, features: ['response_start'] });
    workers.push(w);
    await eventually(
      async () =>
        ((await admin(gw[1].url, 'GET', '/admin/workers', TEST_ADMIN_TOKEN)).json?.data ?? []).some((x: { models: string[] }) => x.models.includes(model)),
      WAIT,
      `${model} visible at the second replica`,
    );
    return w;
  }

  const client = () => new Anthropic({ baseURL: gw[1].url, apiKey: 'none', maxRetries: 0 });

  beforeAll(
    () =>
      withGatewayLogs(async () => {
        replicas = await startReplicas('forwarding_anthropic', ['gw-a', 'gw-b'], { boot: 'first-alone' });
        gw = replicas.gateways;
      }),
    120_000,
  );

  afterAll(async () => {
    for (const w of workers) w.close();
    await replicas?.close();
  });

  const message = {
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    model: 'claude-native',
    content: [{ type: 'text', text: 'Grüße ☃' }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: 3, output_tokens: 2 },
  };
  const events = [
    `event: message_start\ndata: ${JSON.stringify({ type: 'message_start', message: { ...message, content: [], stop_reason: null } })}\n\n`,
    'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n',
    'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Grü"}}\n\n',
    'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ße ☃"}}\n\n',
    'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n',
    'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":2}}\n\n',
    'event: message_stop\ndata: {"type":"message_stop"}\n\n',
  ];

  it('messages.create, whole and streamed, on a worker that speaks Messages: passed through unchanged', async () => {
    const w = await worker('claude-native', ['/v1/messages']);
    const whole = client().messages.create({ model: 'claude-native', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] });
    const req = await w.next('request');
    expect(req).toMatchObject({ endpoint_path: '/v1/messages', is_streaming: false });
    expect(JSON.parse(String(req.body))).toMatchObject({ model: 'claude-native', max_tokens: 16 });
    w.send({
      type: 'response_complete',
      request_id: req.request_id,
      status_code: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(message),
    });
    expect(await whole).toEqual(message);

    const stream = client().messages.stream({ model: 'claude-native', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] });
    const sreq = await w.next('request', (f) => f.request_id !== req.request_id);
    expect(sreq).toMatchObject({ endpoint_path: '/v1/messages', is_streaming: true });
    w.send({ type: 'response_start', request_id: sreq.request_id, status_code: 200, headers: { 'content-type': 'text/event-stream' } });
    for (const e of events) w.chunk(String(sreq.request_id), e);
    w.send({ type: 'response_complete', request_id: sreq.request_id, status_code: 200 });
    const final = await stream.finalMessage();
    expect(final.content).toEqual([{ type: 'text', text: 'Grüße ☃' }]);
    expect(final.stop_reason).toBe('end_turn');
  });

  it('messages.create on a worker that speaks only chat completions: translated at the client’s replica', async () => {
    const w = await worker('chat-only', ['/v1/chat/completions']);
    const pending = client().messages.create({ model: 'chat-only', max_tokens: 16, system: 'Be brief.', messages: [{ role: 'user', content: 'hi' }] });
    const req = await w.next('request');
    expect(req.endpoint_path).toBe('/v1/chat/completions');
    expect(JSON.parse(String(req.body)).messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'hi' },
    ]);
    const chat = {
      id: 'c1',
      object: 'chat.completion',
      model: 'chat-only',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Bonjour' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 4, completion_tokens: 1, total_tokens: 5 },
    };
    w.send({
      type: 'response_complete',
      request_id: req.request_id,
      status_code: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(chat),
    });
    const answer = await pending;
    expect(answer).toMatchObject({
      type: 'message',
      role: 'assistant',
      content: [{ type: 'text', text: 'Bonjour' }],
      stop_reason: 'end_turn',
      usage: { input_tokens: 4, output_tokens: 1 },
    });
  });

  it('a worker lost mid-stream: the Anthropic client gets the dialect’s error event, never message_stop', async () => {
    const w = await worker('claude-lost', ['/v1/messages']);
    const res = fetch(`${gw[1].url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'claude-lost', max_tokens: 16, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    const req = await w.next('request');
    w.send({ type: 'response_start', request_id: req.request_id, status_code: 200, headers: { 'content-type': 'text/event-stream' } });
    w.chunk(String(req.request_id), events[0]);
    const r = await res;
    const reader = r.body!.getReader();
    let text = new TextDecoder().decode((await reader.read()).value);
    expect(text).toContain('message_start');
    w.kill();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    expect(text).toMatch(/event: error\ndata: \{"type":"error","error":\{"type":"[a-z_]+","message":/);
    expect(text).not.toContain('message_stop');
  });
});
