import { connect, Socket } from 'node:net';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { startGateway, TestGateway } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { chat, eventually, post, sleep } from '../support/http';

function sse(obj: unknown): string {
  return `data: ${JSON.stringify(obj)}\n\n`;
}

function chatChunk(content: string) {
  return { id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content }, finish_reason: null }] };
}

async function readAll(res: Response): Promise<Buffer> {
  return Buffer.from(await res.arrayBuffer());
}

describe('streaming relay', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({ HEARTBEAT_INTERVAL_SECS: '0.1', HEARTBEAT_TIMEOUT_SECS: '5' });
  });
  afterAll(() => gw.close());

  it('writes chunks in order, byte-for-byte, as an SSE response with the correlation id', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['s1'] });
    const chunks = ['data: {"a":', '"héllo ✓"}\n', '\n', 'data: {"b":"🙂"}\n\ndata: [DONE]\n\n'];
    const pending = fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-correlation-id': 'corr-stream-1' },
      body: JSON.stringify(chat('s1', { stream: true })),
    });
    const req = await worker.next('request');
    expect(req.is_streaming).toBe(true);
    for (const c of chunks) worker.chunk(req.request_id, c);
    worker.complete(req.request_id, '', 200, { body: '' });
    const res = await pending;
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(res.headers.get('x-correlation-id')).toBe('corr-stream-1');
    expect((await readAll(res)).equals(Buffer.from(chunks.join('')))).toBe(true);
    worker.close();
  });

  it('streams through the OpenAI SDK', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['s2'] });
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'k', maxRetries: 0 });
    const streamPromise = client.chat.completions.create({ model: 's2', stream: true, messages: [{ role: 'user', content: 'x' }] });
    const req = await worker.next('request');
    worker.chunk(req.request_id, sse(chatChunk('Hel')));
    worker.chunk(req.request_id, sse(chatChunk('lo')) + 'data: [DONE]\n\n');
    worker.complete(req.request_id, '', 200, { body: '', token_counts: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } });
    let text = '';
    for await (const part of await streamPromise) text += part.choices[0]?.delta?.content ?? '';
    expect(text).toBe('Hello');
    worker.close();
  });

  it('streams Anthropic messages through the Anthropic SDK', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['claude-local'] });
    const client = new Anthropic({ baseURL: gw.url, apiKey: 'k', maxRetries: 0 });
    const stream = client.messages.stream({ model: 'claude-local', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] });
    const req = await worker.next('request');
    expect(req.endpoint_path).toBe('/v1/messages');
    const events = [
      [
        'message_start',
        {
          type: 'message_start',
          message: {
            id: 'msg_1',
            type: 'message',
            role: 'assistant',
            model: 'claude-local',
            content: [],
            stop_reason: null,
            stop_sequence: null,
            usage: { input_tokens: 1, output_tokens: 0 },
          },
        },
      ],
      ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
      ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Bonjour' } }],
      ['content_block_stop', { type: 'content_block_stop', index: 0 }],
      ['message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 1 } }],
      ['message_stop', { type: 'message_stop' }],
    ] as const;
    for (const [name, data] of events) worker.chunk(req.request_id, `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
    worker.complete(req.request_id, '', 200, { body: '' });
    const final = await stream.finalMessage();
    expect(final.content[0]).toMatchObject({ type: 'text', text: 'Bonjour' });
    worker.close();
  });

  it('relays a backend 4xx on a streaming request as that 4xx with its headers and body', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['s4'] });
    const pending = post(gw.url, '/v1/chat/completions', chat('s4', { stream: true }));
    const req = await worker.next('request');
    const backendError = { error: { message: 'context length exceeded', type: 'invalid_request_error', code: 'context_length_exceeded' } };
    worker.send({
      type: 'response_complete',
      request_id: req.request_id,
      status_code: 400,
      headers: { 'content-type': 'application/json', 'x-backend': 'vllm', 'transfer-encoding': 'chunked', connection: 'close' },
      body: JSON.stringify(backendError),
    });
    const res = await pending;
    expect(res.status).toBe(400);
    expect(res.headers.get('x-backend')).toBe('vllm');
    expect(res.json).toEqual(backendError);
    worker.close();
  });

  it('keeps pinging a worker while it streams continuously', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['s5'] });
    const pending = fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(chat('s5', { stream: true })),
    });
    const req = await worker.next('request');
    const pingsBefore = worker.count('ping');
    for (let i = 0; i < 20; i++) {
      worker.chunk(req.request_id, sse(chatChunk(String(i))));
      await sleep(25);
    }
    expect(worker.count('ping') - pingsBefore).toBeGreaterThanOrEqual(2);
    worker.complete(req.request_id, '', 200, { body: '' });
    await (await pending).text();
    worker.close();
  });

  it('ends a stream whose worker vanished after the first byte with one SSE error event', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['s6'] });
    const spare = await ScriptedWorker.register(gw.workerUrl, { models: ['s6'] });
    const pending = fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(chat('s6', { stream: true })),
    });
    const { worker: first, frame: second } = await ScriptedWorker.firstOf([worker, spare.worker], 'request');
    first.chunk(second.request_id, sse(chatChunk('partial')));
    const res = await pending;
    const reader = res.body!.getReader();
    const firstRead = await reader.read();
    expect(Buffer.from(firstRead.value!).toString()).toContain('partial');
    first.kill();
    let rest = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      rest += Buffer.from(value).toString();
    }
    expect(res.status).toBe(200);
    const events = rest.split('\n\n').filter(Boolean);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatch(/^event: error\ndata: /);
    const data = JSON.parse(events[0].split('data: ')[1]);
    expect(data.error).toMatchObject({ code: 'worker_disconnected', retriable: true });
    // The stream was not requeued: the other worker never got a second copy of the text.
    await sleep(100);
    const other = first === worker ? spare.worker : worker;
    expect(other.count('request')).toBe(0);
    other.close();
  });
});

describe('stream limits and backpressure', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({ MAX_STREAM_BYTES: '65536', SLOW_CLIENT_TIMEOUT_SECS: '30' });
  });
  afterAll(() => gw.close());

  it('ends a stream above the size ceiling with an SSE error and cancels the worker', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['big'] });
    const pending = fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(chat('big', { stream: true })),
    });
    const req = await worker.next('request');
    const piece = sse(chatChunk('x'.repeat(8000)));
    for (let i = 0; i < 12; i++) worker.chunk(req.request_id, piece);
    const text = await (await pending).text();
    expect(text.endsWith('\n\n')).toBe(true);
    const last = text.slice(text.lastIndexOf('event: error'));
    expect(last).toMatch(/^event: error\ndata: .*"code":"stream_too_large"/);
    expect(await worker.next('cancel')).toMatchObject({ request_id: req.request_id });
    worker.close();
  });
});

describe('backpressure', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({ SLOW_CLIENT_TIMEOUT_SECS: '30' });
  });
  afterAll(() => gw.close());

  it('keeps reading the worker while a client does not read, and delivers every byte in order once it reads (its backlog had room)', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['slow-reader'] });
    const port = new URL(gw.url).port;
    const body = JSON.stringify(chat('slow-reader', { stream: true }));
    const client: Socket = connect(Number(port), '127.0.0.1');
    client.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`);
    const req = await worker.next('request');
    client.pause(); // a client that stops reading

    const piece = `data: ${'y'.repeat(65000)}\n\n`;
    const total = 12; // ~780 KB: within STREAM_CLIENT_BUFFER_BYTES (1 MiB) beyond the socket buffers
    for (let i = 0; i < total; i++) worker.chunk(req.request_id, piece);
    // The gateway never stops reading the worker's socket for one client (its other streams would wait).
    await eventually(() => worker.ws.bufferedAmount === 0, 10000);
    worker.complete(req.request_id, '', 200, { body: '' });
    await sleep(300);
    expect(worker.has('cancel')).toBe(false);

    let received = 0;
    client.on('data', (d) => (received += d.length));
    client.resume();
    await eventually(() => received >= total * piece.length, 20000);
    expect(worker.has('cancel')).toBe(false);
    client.destroy();
    worker.close();
  });
});
