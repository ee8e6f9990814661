import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { startGateway, TestGateway, TEST_ADMIN_TOKEN, TEST_SECRET } from '../support/gateway';
import { admin, eventually } from '../support/http';
import { WorkerConfig, workerConfig } from '../../src/worker/config';
import { WorkerDaemon } from '../../src/worker/daemon';
import { FakeBackend, multiByteText } from './support/fake-backend';
import { actLikeLlamaServer } from './support/fake-runners';
import { within } from './support/harness';

/**
 * The whole chain as operators run it: SDK client → real gateway → real worker daemon → fake
 * OpenAI-compatible backend on a loopback port.
 */
describe('worker daemon against the real gateway', () => {
  let gw: TestGateway;
  const backends: FakeBackend[] = [];
  const daemons: WorkerDaemon[] = [];

  const GATEWAY_ENV = { HEARTBEAT_INTERVAL_SECS: '0.2', HEARTBEAT_TIMEOUT_SECS: '5' };

  async function backend(replyText?: string): Promise<FakeBackend> {
    const b = new FakeBackend();
    if (replyText) b.replyText = replyText;
    await b.start();
    backends.push(b);
    return b;
  }

  /** Starts a daemon and resolves once the gateway has acknowledged its registration. */
  async function worker(b: FakeBackend, overrides: Partial<WorkerConfig> = {}): Promise<WorkerDaemon> {
    const daemon = new WorkerDaemon(
      workerConfig({
        workerSecret: TEST_SECRET,
        proxyUrl: gw.url,
        backendUrl: b.url,
        workerName: `w-${daemons.length + 1}`,
        models: ['llama3'],
        discoverModels: false,
        heartbeatIntervalMs: 200,
        reconnectMinMs: 50,
        reconnectMaxMs: 200,
        drainTimeoutMs: 2_000,
        probe: false,
        ...overrides,
      }),
    );
    daemons.push(daemon);
    const registered = new Promise<void>((resolve) => daemon.once('registered', () => resolve()));
    daemon.start();
    await registered;
    return daemon;
  }

  const openai = () => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'client-key', maxRetries: 0 });

  beforeEach(async () => {
    gw = await startGateway(GATEWAY_ENV);
  });

  afterEach(async () => {
    for (const d of daemons.splice(0)) {
      void d.stop();
      void d.stop();
      await d.waitForExit();
    }
    await gw.close();
    await Promise.all(backends.splice(0).map((b) => b.close()));
  });

  it('answers a non-streaming OpenAI chat completion through the daemon, with the backend usage', async () => {
    const b = await backend('Hi from llama!');
    await worker(b);
    const res = await openai().chat.completions.create({ model: 'llama3', messages: [{ role: 'user', content: 'hello' }] });
    expect(res.choices[0].message.content).toBe('Hi from llama!');
    expect(res.usage).toEqual(expect.objectContaining({ prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 }));
    expect(b.relayed[0].path).toBe('/v1/chat/completions');
  });

  it('delivers a ~3 MiB non-streaming answer with multi-byte text intact (the daemon sends it as chunks, the gateway reassembles)', async () => {
    const text = multiByteText(3 * 1024 * 1024);
    const b = await backend(text);
    await worker(b);
    const res = await openai().chat.completions.create({ model: 'llama3', messages: [{ role: 'user', content: 'a long one' }] });
    expect(res.choices[0].message.content).toBe(text);
    expect(res.usage).toEqual(expect.objectContaining({ prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 }));

    // The same through plain fetch: the raw body, not just what the SDK made of it.
    const raw = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'llama3', messages: [{ role: 'user', content: 'again' }] }),
    });
    expect(raw.status).toBe(200);
    expect(raw.headers.get('content-type')).toContain('application/json');
    const bytes = Buffer.from(await raw.arrayBuffer());
    expect(bytes.length).toBeGreaterThan(3 * 1024 * 1024);
    expect(JSON.parse(bytes.toString('utf8')).choices[0].message.content).toBe(text);
  });

  it('streams an OpenAI chat completion with multi-byte text through the daemon', async () => {
    const b = await backend('Grüße 🌍 日本語 — streamed');
    await worker(b);
    const stream = await openai().chat.completions.create({
      model: 'llama3',
      stream: true,
      messages: [{ role: 'user', content: 'hello' }],
    });
    let text = '';
    for await (const part of stream) text += part.choices[0]?.delta?.content ?? '';
    expect(text).toBe('Grüße 🌍 日本語 — streamed');
  });

  it('answers Anthropic messages, plain and streamed, through the daemon', async () => {
    const b = await backend('Bonjour from the backend');
    await worker(b);
    const client = new Anthropic({ baseURL: gw.url, apiKey: 'client-key', maxRetries: 0 });
    const msg = await client.messages.create({ model: 'llama3', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] });
    expect(msg.content[0]).toEqual(expect.objectContaining({ type: 'text', text: 'Bonjour from the backend' }));
    expect(msg.usage).toEqual(expect.objectContaining({ input_tokens: 11, output_tokens: 7 }));

    let streamed = '';
    const stream = await client.messages.create({
      model: 'llama3',
      max_tokens: 64,
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
    });
    for await (const event of stream) {
      if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') streamed += event.delta.text;
    }
    expect(streamed).toBe('Bonjour from the backend');
    expect(b.relayed.map((r) => r.path)).toEqual(['/v1/messages', '/v1/messages']);
  });

  it('registers with the probed capabilities, endpoints, runner and a priority, and serves through the gateway', async () => {
    const b = await backend('probed and served');
    b.models = ['llama3'];
    actLikeLlamaServer(b, { ctxSize: 8192, slots: 2, vision: true, build: 'b6500-abc' });
    const daemon = await worker(b, { probe: true, priority: 5 });
    expect(daemon.status.workerId).toBeDefined();
    const res = await openai().chat.completions.create({ model: 'llama3', messages: [{ role: 'user', content: 'hello' }] });
    expect(res.choices[0].message.content).toBe('probed and served');
    expect(b.relayed.map((r) => r.path)).toEqual(['/v1/chat/completions']);
  });

  it('passes a backend 429 through to the client with its body', async () => {
    const b = await backend();
    b.enqueue({ kind: 'status', status: 429, body: JSON.stringify({ error: { message: 'all slots busy', type: 'rate_limit_error' } }) });
    await worker(b);
    const err = await openai()
      .chat.completions.create({ model: 'llama3', messages: [{ role: 'user', content: 'hello' }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect((err as InstanceType<typeof OpenAI.APIError>).status).toBe(429);
    expect((err as InstanceType<typeof OpenAI.APIError>).message).toContain('all slots busy');
  });

  it('load-balances concurrent requests over two daemons', async () => {
    const a = await backend('from A');
    const b = await backend('from B');
    a.enqueue({ kind: 'slow', delayMs: 200 });
    b.enqueue({ kind: 'slow', delayMs: 200 });
    await worker(a, { maxConcurrency: 1 });
    await worker(b, { maxConcurrency: 1 });
    const client = openai();
    const answers = await Promise.all([1, 2].map(() => client.chat.completions.create({ model: 'llama3', messages: [{ role: 'user', content: 'x' }] })));
    expect(answers.map((r) => r.choices[0].message.content).sort()).toEqual(['from A', 'from B']);
    expect(a.maxInFlightSeen).toBe(1);
    expect(b.maxInFlightSeen).toBe(1);
  });

  it('stops the backend generation when the client goes away mid-stream', async () => {
    const b = await backend();
    b.enqueue({ kind: 'raw-stream', pieces: [Buffer.from('data: {"choices":[{"delta":{"content":"x"}}]}\n\n')], delayMs: 1, then: 'hang' });
    await worker(b);
    const controller = new AbortController();
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'llama3', stream: true, messages: [{ role: 'user', content: 'x' }] }),
      signal: controller.signal,
    });
    const reader = res.body!.getReader();
    await reader.read();
    const call = b.relayed[0];
    controller.abort();
    await within(call.socketClosed, 'the backend socket to close');
    // The slot is free again: the next request is served by the same single-slot worker.
    const next = await openai().chat.completions.create({ model: 'llama3', messages: [{ role: 'user', content: 'again' }] });
    expect(next.choices[0].message.content).toBe(b.replyText);
  });

  it('reconnects to a restarted gateway on the same port and serves again', async () => {
    const b = await backend('after restart');
    const daemon = await worker(b);
    const port = new URL(gw.url).port;
    await gw.close();
    await new Promise<void>((resolve) => daemon.once('reconnect_scheduled', () => resolve()));
    gw = await startGateway({ ...GATEWAY_ENV, LISTEN_ADDR: `127.0.0.1:${port}` });
    await new Promise<void>((resolve) => daemon.once('registered', () => resolve()));
    const res = await openai().chat.completions.create({ model: 'llama3', messages: [{ role: 'user', content: 'hello' }] });
    expect(res.choices[0].message.content).toBe('after restart');
  });

  it('finishes in-flight work when an operator drains the worker, then exits with --exit-on-drain', async () => {
    const b = await backend('finished during drain');
    b.enqueue({ kind: 'slow', delayMs: 300 });
    const daemon = await worker(b, { exitOnDrain: true });
    const pending = openai().chat.completions.create({ model: 'llama3', messages: [{ role: 'user', content: 'hello' }] });
    await b.waitForRelayed(1);
    const workers = await admin(gw.url, 'GET', '/admin/workers', TEST_ADMIN_TOKEN);
    const id = workers.json.data[0].id as string;
    expect((await admin(gw.url, 'POST', `/admin/workers/${id}/drain`, TEST_ADMIN_TOKEN, { reason: 'maintenance' })).status).toBe(202);
    expect((await pending).choices[0].message.content).toBe('finished during drain');
    expect(await daemon.waitForExit()).toBe(0);
    await eventually(async () => (await admin(gw.url, 'GET', '/admin/workers', TEST_ADMIN_TOKEN)).json.data.length === 0);
  });

  it('a request the stopped daemon has relayed nothing for at its drain deadline is requeued by the gateway, not failed', async () => {
    const a = await backend('from A');
    a.enqueue({ kind: 'hang' });
    const stopping = await worker(a, { drainTimeoutMs: 100 });
    const pending = openai().chat.completions.create({ model: 'llama3', messages: [{ role: 'user', content: 'hello' }] });
    const call = await a.waitForRelayed(1);
    const b = await backend('from B');
    await worker(b);
    const exit = stopping.stop();
    expect((await pending).choices[0].message.content).toBe('from B');
    await within(call.socketClosed, 'the backend call on the stopped worker to be aborted');
    expect(await exit).toBe(0);
  });

  it('when the daemon is stopped (SIGTERM) the in-flight request still completes for the client', async () => {
    const b = await backend('last answer');
    b.enqueue({ kind: 'slow', delayMs: 300 });
    const daemon = await worker(b);
    const pending = openai().chat.completions.create({ model: 'llama3', messages: [{ role: 'user', content: 'hello' }] });
    await b.waitForRelayed(1);
    const exit = daemon.stop();
    expect((await pending).choices[0].message.content).toBe('last answer');
    expect(await exit).toBe(0);
  });
});
