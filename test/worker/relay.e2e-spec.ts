import { MAX_INLINE_BODY_BYTES } from '../../src/worker/requests/request-runner';
import { anthropicSse, cutBytes, multiByteText, openAiChatSse, responsesSse } from './support/fake-backend';
import { SECRET, requestFrame, useWorkerHarness } from './support/harness';

const LONE_SURROGATE_AT_EDGE = /^[\uDC00-\uDFFF]|[\uD800-\uDBFF]$/;

describe('worker daemon: registration and relaying requests', () => {
  const { env, startWorker } = useWorkerHarness();

  it('connects with the secret in x-worker-secret and registers at once with protocol version, models, capacity and capabilities', async () => {
    startWorker({
      workerName: 'gpu-box-a',
      models: ['llama3', 'qwen2.5:7b'],
      maxConcurrency: 3,
      capabilities: { 'qwen2.5:7b': { tools: true, context_length: 32768 }, 'not-served': { vision: true } },
      provider: 'team-a',
    });
    const conn = await env.gateway.connection(1);
    expect(conn.secretHeader).toBe(SECRET);
    expect(conn.request.url).toBe('/v1/worker/connect?provider=team-a');
    expect(conn.request.url).not.toContain(SECRET);
    const register = await conn.next('register');
    expect(conn.frames[0]).toBe(register);
    expect(register).toEqual({
      type: 'register',
      worker_name: 'gpu-box-a',
      models: ['llama3', 'qwen2.5:7b'],
      max_concurrent: 3,
      protocol_version: '2026-04-bridge-v1',
      current_load: 0,
      capabilities: { 'qwen2.5:7b': { tools: true, context_length: 32768 } },
      features: ['response_start', 'cancel_reasons', 'model_lifecycle', 'gpu_time'],
    });
  });

  it('logs the warnings of the register_ack', async () => {
    env.gateway.ackWarnings = ['model list truncated to 1 entries'];
    const worker = startWorker();
    await new Promise<void>((resolve) => worker.daemon.once('registered', () => resolve()));
    expect(worker.logs).toContainEqual(expect.objectContaining({ level: 'warn', warning: 'model list truncated to 1 entries' }));
  });

  it('relays a non-streaming chat completion: one response_complete with status, headers, body and token counts', async () => {
    startWorker();
    const conn = await env.gateway.connection(1);
    const req = requestFrame();
    conn.send(req);
    const done = await conn.final(req.request_id);
    expect(done.type).toBe('response_complete');
    expect(done.status_code).toBe(200);
    expect(done.headers['content-type']).toBe('application/json');
    expect(done.headers['x-backend']).toBe('fake');
    expect(done.headers).not.toHaveProperty('connection');
    expect(done.headers).not.toHaveProperty('content-length');
    expect(done.headers).not.toHaveProperty('transfer-encoding');
    expect(JSON.parse(done.body).choices[0].message.content).toBe(env.backend.replyText);
    expect(done.token_counts).toEqual({ prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 });
    expect(conn.framesFor(req.request_id)).toHaveLength(1);
  });

  it('POSTs the raw body to backend + endpoint_path with client headers, minus the worker secret and hop-by-hop headers', async () => {
    startWorker();
    const conn = await env.gateway.connection(1);
    const body = '{"model":"llama3","messages":[{"role":"user","content":"Grüße"}],"stream":false}';
    conn.send({
      ...requestFrame(),
      body,
      headers: {
        authorization: 'Bearer client-key-abc',
        'content-type': 'application/json',
        'openai-organization': 'org-1',
        'x-worker-secret': 'leaked-by-a-buggy-gateway',
        connection: 'keep-alive, X-Foo',
        'x-foo': 'for the next hop only',
        'transfer-encoding': 'chunked',
        'accept-encoding': 'gzip',
      },
    });
    const seen = await env.backend.waitForRelayed(1);
    expect(seen.method).toBe('POST');
    expect(seen.path).toBe('/v1/chat/completions');
    expect(seen.body).toBe(body);
    expect(seen.headers.authorization).toBe('Bearer client-key-abc');
    expect(seen.headers['openai-organization']).toBe('org-1');
    expect(seen.headers['content-length']).toBe(String(Buffer.byteLength(body)));
    expect(seen.headers).not.toHaveProperty('x-worker-secret');
    expect(seen.headers).not.toHaveProperty('transfer-encoding');
    expect(seen.headers).not.toHaveProperty('accept-encoding');
    expect(seen.headers).not.toHaveProperty('x-foo'); // nominated by Connection
  });

  it('replaces client credentials with --backend-api-key when one is configured', async () => {
    startWorker({ backendApiKey: 'vllm-key-42' });
    const conn = await env.gateway.connection(1);
    conn.send(requestFrame({ headers: { authorization: 'Bearer client-key-abc', 'content-type': 'application/json' } }));
    const seen = await env.backend.waitForRelayed(1);
    expect(seen.headers.authorization).toBe('Bearer vllm-key-42');
  });

  it('relays a streaming chat completion as response_chunks followed by a bodiless response_complete with the final usage', async () => {
    startWorker();
    const conn = await env.gateway.connection(1);
    const req = requestFrame({ stream: true });
    conn.send(req);
    const done = await conn.final(req.request_id);
    const frames = conn.framesFor(req.request_id);
    const chunks = frames.filter((f) => f.type === 'response_chunk');
    expect(frames[frames.length - 1]).toBe(done);
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks.map((c) => c.chunk).join('')).toBe(openAiChatSse(env.backend.replyText, 'llama3'));
    expect(frames.some((f) => f.type === 'response_start')).toBe(false); // not negotiated
    expect(done).toEqual({
      type: 'response_complete',
      request_id: req.request_id,
      status_code: 200,
      headers: expect.objectContaining({ 'content-type': 'text/event-stream' }),
      token_counts: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 },
    });
  });

  it('sends response_start with the backend status and headers before the first chunk once the gateway accepted the feature', async () => {
    env.gateway.ackFeatures = ['response_start'];
    startWorker();
    const conn = await env.gateway.connection(1);
    const req = requestFrame({ stream: true });
    conn.send(req);
    await conn.final(req.request_id);
    const frames = conn.framesFor(req.request_id);
    expect(frames[0]).toEqual({
      type: 'response_start',
      request_id: req.request_id,
      status_code: 200,
      headers: expect.objectContaining({ 'content-type': 'text/event-stream' }),
    });
    expect(frames[1].type).toBe('response_chunk');
    expect(frames.filter((f) => f.type === 'response_start')).toHaveLength(1);
  });

  it('relays Anthropic /v1/messages, non-streaming and streaming, with input/output tokens as token counts', async () => {
    env.backend.usage = { prompt: 25, completion: 15 };
    startWorker();
    const conn = await env.gateway.connection(1);
    const plain = requestFrame({
      path: '/v1/messages',
      headers: { 'x-api-key': 'ant-key', 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
    });
    conn.send(plain);
    const plainDone = await conn.final(plain.request_id);
    expect(plainDone.status_code).toBe(200);
    expect(JSON.parse(plainDone.body).content[0].text).toBe(env.backend.replyText);
    expect(plainDone.token_counts).toEqual({ prompt_tokens: 25, completion_tokens: 15, total_tokens: 40 });
    const seen = await env.backend.waitForRelayed(1);
    expect(seen.path).toBe('/v1/messages');
    expect(seen.headers['anthropic-version']).toBe('2023-06-01');
    expect(seen.headers['x-api-key']).toBe('ant-key');

    const streamed = requestFrame({ path: '/v1/messages', stream: true });
    conn.send(streamed);
    const streamDone = await conn.final(streamed.request_id);
    const text = conn
      .framesFor(streamed.request_id)
      .filter((f) => f.type === 'response_chunk')
      .map((f) => f.chunk)
      .join('');
    expect(text).toBe(anthropicSse(env.backend.replyText, 'llama3', env.backend.usage));
    expect(streamDone.token_counts).toEqual({ prompt_tokens: 25, completion_tokens: 15, total_tokens: 40 });
  });

  it('relays OpenAI /v1/responses, non-streaming and streaming, with usage from response.completed', async () => {
    startWorker();
    const conn = await env.gateway.connection(1);
    const plain = requestFrame({ path: '/v1/responses' });
    conn.send(plain);
    const plainDone = await conn.final(plain.request_id);
    expect(JSON.parse(plainDone.body).object).toBe('response');
    expect(plainDone.token_counts).toEqual({ prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 });

    const streamed = requestFrame({ path: '/v1/responses', stream: true });
    conn.send(streamed);
    const streamDone = await conn.final(streamed.request_id);
    const text = conn
      .framesFor(streamed.request_id)
      .filter((f) => f.type === 'response_chunk')
      .map((f) => f.chunk)
      .join('');
    expect(text).toBe(responsesSse(env.backend.replyText, 'llama3'));
    expect(streamDone.token_counts).toEqual({ prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 });
  });

  it('passes a backend 429 through with its status, headers and body (non-streaming)', async () => {
    const errorBody = JSON.stringify({ error: { message: 'slots busy', type: 'rate_limit_error' } });
    env.backend.enqueue({ kind: 'status', status: 429, body: errorBody, headers: { 'retry-after': '3' } });
    startWorker();
    const conn = await env.gateway.connection(1);
    const req = requestFrame();
    conn.send(req);
    const done = await conn.final(req.request_id);
    expect(done.type).toBe('response_complete');
    expect(done.status_code).toBe(429);
    expect(done.headers['retry-after']).toBe('3');
    expect(done.body).toBe(errorBody);
  });

  it('answers a streaming request that got a non-2xx with one response_complete carrying the error body and no chunks', async () => {
    const errorBody = JSON.stringify({ error: { message: 'context too long', type: 'invalid_request_error' } });
    env.backend.enqueue({ kind: 'status', status: 400, body: errorBody });
    startWorker();
    const conn = await env.gateway.connection(1);
    const req = requestFrame({ stream: true });
    conn.send(req);
    const done = await conn.final(req.request_id);
    expect(done.status_code).toBe(400);
    expect(done.body).toBe(errorBody);
    expect(conn.framesFor(req.request_id).filter((f) => f.type === 'response_chunk')).toHaveLength(0);
  });

  it('never splits a multi-byte character across chunks when the backend cuts them between reads', async () => {
    const sse = openAiChatSse('Grüße aus Köln — 日本語のテキスト 🚀🌍 ñandú', 'llama3');
    const pieces = cutBytes(sse, 5);
    env.backend.enqueue({ kind: 'raw-stream', pieces, delayMs: 3, then: 'end' });
    startWorker();
    const conn = await env.gateway.connection(1);
    const req = requestFrame({ stream: true });
    conn.send(req);
    await conn.final(req.request_id);
    const chunks = conn
      .framesFor(req.request_id)
      .filter((f) => f.type === 'response_chunk')
      .map((f) => f.chunk as string);
    expect(chunks.length).toBeGreaterThan(10); // the cuts really reached the worker as separate reads
    expect(chunks.join('')).toBe(sse);
    for (const chunk of chunks) expect(chunk).not.toContain('\uFFFD');
  });

  describe('non-streaming bodies above MAX_INLINE_BODY_BYTES (a frame above the gateway max payload would close the link)', () => {
    it('sends a ~3 MiB multi-byte body as response_chunks of at most 1 MiB, cut between characters, then a response_complete without body', async () => {
      env.backend.replyText = multiByteText(3 * MAX_INLINE_BODY_BYTES);
      startWorker();
      const conn = await env.gateway.connection(1);
      const req = requestFrame();
      conn.send(req);
      const done = await conn.final(req.request_id);
      const frames = conn.framesFor(req.request_id);
      const chunks = frames.slice(0, -1);
      expect(frames[frames.length - 1]).toBe(done);
      expect(chunks.length).toBeGreaterThanOrEqual(3);
      expect(chunks.every((f) => f.type === 'response_chunk')).toBe(true);
      expect(done).toEqual({
        type: 'response_complete',
        request_id: req.request_id,
        status_code: 200,
        headers: expect.objectContaining({ 'content-type': 'application/json', 'x-backend': 'fake' }),
        token_counts: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 },
      });
      expect(done).not.toHaveProperty('body');
      for (const { chunk } of chunks) {
        expect(Buffer.byteLength(chunk)).toBeLessThanOrEqual(MAX_INLINE_BODY_BYTES);
        expect(chunk).not.toContain('\uFFFD');
        expect(chunk).not.toMatch(LONE_SURROGATE_AT_EDGE);
      }
      const body = chunks.map((f) => f.chunk as string).join('');
      expect(JSON.parse(body).choices[0].message.content).toBe(env.backend.replyText);
      expect(Math.max(...conn.rawFrames.map((f) => Buffer.byteLength(f)))).toBeLessThan(2 * MAX_INLINE_BODY_BYTES);
    });

    it('keeps a body of exactly MAX_INLINE_BODY_BYTES inline; a bigger one is cut before a 4-byte character that straddles the limit', async () => {
      const head = '{"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3},"pad":"';
      const exact = head + 'x'.repeat(MAX_INLINE_BODY_BYTES - head.length - 2) + '"}';
      // The rocket's 4 bytes sit at MAX-2 … MAX+1: a cut at the limit would split it.
      const over = head + 'x'.repeat(MAX_INLINE_BODY_BYTES - 2 - head.length) + '🚀"}';
      expect(Buffer.byteLength(exact)).toBe(MAX_INLINE_BODY_BYTES);
      for (const body of [exact, over]) {
        env.backend.enqueue({ kind: 'raw-stream', pieces: cutBytes(body, 65_536), delayMs: 0, then: 'end', headers: { 'content-type': 'application/json' } });
      }
      startWorker();
      const conn = await env.gateway.connection(1);
      const inline = requestFrame();
      conn.send(inline);
      const inlineDone = await conn.final(inline.request_id);
      expect(conn.framesFor(inline.request_id)).toEqual([inlineDone]);
      expect(inlineDone.body).toBe(exact);
      expect(inlineDone.token_counts).toEqual({ prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 });

      const split = requestFrame();
      conn.send(split);
      const splitDone = await conn.final(split.request_id);
      const chunks = conn
        .framesFor(split.request_id)
        .filter((f) => f.type === 'response_chunk')
        .map((f) => f.chunk as string);
      expect(chunks.map((c) => Buffer.byteLength(c))).toEqual([MAX_INLINE_BODY_BYTES - 2, 6]);
      expect(chunks[1]).toBe('🚀"}');
      expect(chunks.join('')).toBe(over);
      expect(splitDone).not.toHaveProperty('body');
      expect(splitDone.token_counts).toEqual({ prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 });
    });

    it('chunks a large non-2xx answer to a non-streaming request too, with the status on the bodiless response_complete', async () => {
      const errorBody = JSON.stringify({ error: { message: multiByteText(2 * MAX_INLINE_BODY_BYTES), type: 'server_error' } });
      env.backend.enqueue({ kind: 'status', status: 500, body: errorBody });
      startWorker();
      const conn = await env.gateway.connection(1);
      const req = requestFrame();
      conn.send(req);
      const done = await conn.final(req.request_id);
      expect(done).toEqual({ type: 'response_complete', request_id: req.request_id, status_code: 500, headers: expect.any(Object) });
      const chunks = conn.framesFor(req.request_id).filter((f) => f.type === 'response_chunk');
      expect(chunks.length).toBeGreaterThanOrEqual(2);
      expect(chunks.map((f) => f.chunk).join('')).toBe(errorBody);
    });
  });

  it('answers ping with pong carrying the current load and the echoed timestamp', async () => {
    env.backend.enqueue({ kind: 'hang' });
    startWorker({ maxConcurrency: 2 });
    const conn = await env.gateway.connection(1);
    conn.send({ type: 'ping', timestamp_unix_ms: 1763712000000 });
    expect(await conn.next('pong')).toEqual({ type: 'pong', current_load: 0, timestamp_unix_ms: 1763712000000 });
    conn.send(requestFrame({ stream: true }));
    await env.backend.waitForRelayed(1);
    conn.send({ type: 'ping' });
    expect(await conn.next('pong')).toEqual({ type: 'pong', current_load: 1 });
  });

  it('never runs more than max_concurrency backend calls: an over-assigned request waits locally and runs when a slot frees', async () => {
    env.backend.enqueue({ kind: 'slow', delayMs: 300 });
    startWorker({ maxConcurrency: 1 });
    const conn = await env.gateway.connection(1);
    const first = requestFrame();
    const second = requestFrame();
    conn.send(first);
    await env.backend.waitForRelayed(1);
    conn.send(second);
    conn.send({ type: 'ping' });
    expect((await conn.next('pong')).current_load).toBe(2);
    const [a, b] = await Promise.all([conn.final(first.request_id), conn.final(second.request_id)]);
    expect(a.status_code).toBe(200);
    expect(b.status_code).toBe(200);
    expect(env.backend.relayed).toHaveLength(2);
    expect(env.backend.maxInFlightSeen).toBe(1);
  });

  it('answers 503 once the local queue is full too', async () => {
    env.backend.enqueue({ kind: 'hang' });
    startWorker({ maxConcurrency: 1 });
    const conn = await env.gateway.connection(1);
    conn.send(requestFrame());
    await env.backend.waitForRelayed(1);
    conn.send(requestFrame()); // queued
    const third = requestFrame();
    conn.send(third);
    const done = await conn.final(third.request_id);
    expect(done.status_code).toBe(503);
    expect(JSON.parse(done.body).error.code).toBe('worker_at_capacity');
  });
});
