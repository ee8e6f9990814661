import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { startGateway, TestGateway, TEST_ADMIN_TOKEN } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { admin, chat, post } from '../support/http';

const OPENAI_ERROR_KEYS = ['code', 'kind', 'message', 'param', 'retriable', 'type'];

describe('client-facing error contract', () => {
  let gw: TestGateway;
  let openai: OpenAI;
  let anthropic: Anthropic;
  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-cfg-'));
    writeFileSync(
      join(dir, 'c.yaml'),
      `providers:
  - name: local
    secret: test-worker-secret
  - name: paused
    secret: paused-secret
    enabled: false
    models: [paused-model]
  - name: tiny
    secret: tiny-secret
    max_queue_len: 1
    queue_timeout_secs: 0.3
    request_timeout_secs: 0.6
    models: [tiny-model]
`,
    );
    gw = await startGateway({ CONFIG_FILE: join(dir, 'c.yaml'), MAX_BODY_BYTES: '2048' });
    openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'k', maxRetries: 0 });
    anthropic = new Anthropic({ baseURL: gw.url, apiKey: 'k', maxRetries: 0 });
  });
  afterAll(() => gw.close());

  describe('400 invalid_request', () => {
    it.each([
      ['malformed JSON', '{"model": "m",'],
      ['a missing model', { messages: [] }],
      ['an empty model', { model: '', messages: [] }],
      ['a non-boolean stream', { model: 'm', stream: 'yes' }],
      ['a non-object body', '[1,2]'],
    ])('rejects %s in the OpenAI dialect', async (_label, body) => {
      const res = await post(gw.url, '/v1/chat/completions', body);
      expect(res.status).toBe(400);
      expect(Object.keys(res.json.error).sort()).toEqual(OPENAI_ERROR_KEYS);
      expect(res.json.error).toMatchObject({ code: 'invalid_request', type: 'invalid_request_error', retriable: false });
    });

    it('rejects malformed JSON on /v1/messages in the Anthropic dialect', async () => {
      const res = await post(gw.url, '/v1/messages', '{oops');
      expect(res.status).toBe(400);
      expect(res.json).toEqual({
        type: 'error',
        error: { type: 'invalid_request_error', message: expect.any(String), code: 'invalid_request', kind: 'INVALID_PARAMS', retriable: false },
      });
    });

    it('answers 413 for a body above the configured limit', async () => {
      const res = await post(gw.url, '/v1/chat/completions', chat('m', { pad: 'x'.repeat(4096) }));
      expect(res.status).toBe(413);
      expect(res.json.error.code).toBe('payload_too_large');
    });
  });

  it('404 model_not_found through the OpenAI SDK, without waiting for a queue', async () => {
    const err = await openai.chat.completions.create(chat('ghost') as never).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect(err.status).toBe(404);
    expect(err.error).toMatchObject({ code: 'model_not_found', message: "Model 'ghost' not found", retriable: false });
  });

  it('404 model_not_found through the Anthropic SDK in its dialect', async () => {
    const err = await anthropic.messages.create({ model: 'ghost', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(err).toBeInstanceOf(Anthropic.NotFoundError);
    expect(err.error).toEqual({
      type: 'error',
      error: { type: 'not_found_error', message: "Model 'ghost' not found", code: 'model_not_found', kind: 'INVALID_PARAMS', retriable: false },
    });
  });

  it('404 model_not_found echoes at most 256 characters of an unknown model name', async () => {
    const res = await post(gw.url, '/v1/chat/completions', chat('x'.repeat(1500)));
    expect(res.status).toBe(404);
    expect(res.json.error).toMatchObject({ code: 'model_not_found', message: `Model '${'x'.repeat(256)}…' not found` });
    const exact = await post(gw.url, '/v1/messages', { model: 'y'.repeat(256), max_tokens: 5, messages: [] });
    expect(exact.json.error.message).toBe(`Model '${'y'.repeat(256)}' not found`);
  });

  it('503 provider_disabled for a model only a disabled provider serves', async () => {
    const res = await post(gw.url, '/v1/chat/completions', chat('paused-model'));
    expect(res.status).toBe(503);
    expect(res.json.error).toMatchObject({ code: 'provider_disabled', message: 'Provider is currently disabled', retriable: true });
  });

  it('429 queue_full with Retry-After, X-Backoff-Ms and a policy label when the queue is at its bound', async () => {
    const first = post(gw.url, '/v1/chat/completions', chat('tiny-model')); // waits in the queue (bound 1)
    await new Promise((r) => setTimeout(r, 50));
    const res = await post(gw.url, '/v1/chat/completions', chat('tiny-model'));
    expect(res.status).toBe(429);
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(Number(res.headers.get('x-backoff-ms'))).toBeGreaterThan(0);
    expect(res.json.error).toMatchObject({
      code: 'queue_full',
      message: expect.stringMatching(/^Service temporarily at capacity: queue depth 1, average wait \d+ ms, please retry$/),
      queueDepth: 1,
      avgWaitMs: expect.any(Number),
      retriable: true,
      retry_after_ms: Number(res.headers.get('x-backoff-ms')),
      policy_label: expect.any(String),
    });
    expect((await first).status).toBe(504);
  });

  it('429 queue_full in the Anthropic dialect is a rate_limit_error', async () => {
    const first = post(gw.url, '/v1/messages', { model: 'tiny-model', max_tokens: 1, messages: [] });
    await new Promise((r) => setTimeout(r, 50));
    const res = await post(gw.url, '/v1/messages', { model: 'tiny-model', max_tokens: 1, messages: [] });
    expect(res.status).toBe(429);
    expect(res.json.error).toMatchObject({ type: 'rate_limit_error', code: 'queue_full', retriable: true });
    await first;
  });

  it('504 queue_timeout when no worker frees up within the queue timeout', async () => {
    const res = await post(gw.url, '/v1/chat/completions', chat('tiny-model'));
    expect(res.status).toBe(504);
    expect(res.json.error).toMatchObject({ code: 'queue_timeout', type: 'timeout_error', retriable: true });
  });

  it('504 request_timeout and cancel{timeout} when a worker holds a request past its lifetime', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['tiny-model'] }, { provider: 'tiny', secret: 'tiny-secret' });
    const pending = post(gw.url, '/v1/chat/completions', chat('tiny-model'));
    const req = await worker.next('request');
    const res = await pending;
    expect(res.status).toBe(504);
    expect(res.json.error.code).toBe('request_timeout');
    const cancel = await worker.next('cancel');
    expect(cancel).toEqual({ type: 'cancel', request_id: req.request_id, reason: 'timeout' });
    worker.close();
  });

  it('502 worker_error when the worker reports an error for the request', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['err-model'] });
    const pending = post(gw.url, '/v1/chat/completions', chat('err-model'));
    const req = await worker.next('request');
    worker.send({ type: 'error', request_id: req.request_id, code: 'backend_response_failed', message: 'backend 10.0.0.7:8000 reset the connection' });
    const res = await pending;
    expect(res.status).toBe(502);
    expect(res.json.error).toMatchObject({ code: 'worker_error', retriable: true });
    expect(res.text).not.toContain('10.0.0.7'); // internal details are not leaked
    worker.close();
  });

  it('503 no_healthy_worker with Retry-After when backend_unavailable leaves no other worker to requeue to', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['unreachable-model'] });
    const pending = post(gw.url, '/v1/chat/completions', chat('unreachable-model'));
    const req = await worker.next('request');
    worker.send({ type: 'error', request_id: req.request_id, code: 'backend_unavailable', message: 'connect ECONNREFUSED 10.0.0.7:8000' });
    const res = await pending;
    expect(res.status).toBe(503);
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(res.json.error).toMatchObject({ code: 'no_healthy_worker', retriable: true });
    expect(res.text).not.toContain('10.0.0.7');
    expect(worker.count('request')).toBe(1); // not sent back to the worker that could not reach its backend
    worker.close();
  });

  it('503 requeue_exhausted after the worker dies on the request more times than the requeue limit', async () => {
    const first = await ScriptedWorker.register(gw.workerUrl, { models: ['fragile'] });
    const request = post(gw.url, '/v1/chat/completions', chat('fragile'));
    let current = first.worker;
    for (let attempt = 0; attempt < 4; attempt++) {
      await current.next('request');
      const next = attempt < 3 ? (await ScriptedWorker.register(gw.workerUrl, { models: ['fragile'] })).worker : undefined;
      current.kill();
      if (next) current = next;
    }
    const final = await request;
    expect(final.status).toBe(503);
    expect(final.json.error).toMatchObject({ code: 'requeue_exhausted', retriable: true });
  });

  it("503 provider_deleted for queued and in-flight requests, and the provider's workers are closed", async () => {
    const created = await admin(gw.url, 'POST', '/admin/providers', TEST_ADMIN_TOKEN, {
      name: 'doomed',
      secret: 'doomed-secret',
      max_queue_len: 5,
      models: ['doomed-model'],
    });
    expect(created.status).toBe(201);
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['doomed-model'] }, { provider: 'doomed', secret: 'doomed-secret' });
    const inFlight = post(gw.url, '/v1/chat/completions', chat('doomed-model'));
    await worker.next('request');
    const queued = post(gw.url, '/v1/chat/completions', chat('doomed-model'));
    await new Promise((r) => setTimeout(r, 50));
    expect((await admin(gw.url, 'DELETE', '/admin/providers/doomed', TEST_ADMIN_TOKEN)).status).toBe(200);
    for (const res of [await inFlight, await queued]) {
      expect(res.status).toBe(503);
      expect(res.json.error).toMatchObject({ code: 'provider_deleted', retriable: true });
    }
    expect(await worker.closed).toEqual({ code: 1000, reason: 'graceful shutdown complete' });
  });

  it('503 drain_timeout when a drained worker does not finish before the deadline', async () => {
    const { worker, ack } = await ScriptedWorker.register(gw.workerUrl, { models: ['slow-model'] });
    const pending = post(gw.url, '/v1/chat/completions', chat('slow-model'));
    const req = await worker.next('request');
    const drain = await admin(gw.url, 'POST', `/admin/workers/${ack.worker_id}/drain`, TEST_ADMIN_TOKEN, { timeout_secs: 0.2 });
    expect(drain.status).toBe(202);
    expect(await worker.next('graceful_shutdown')).toMatchObject({ drain_timeout_secs: 1 });
    const res = await pending;
    expect(res.status).toBe(503);
    expect(res.json.error).toMatchObject({ code: 'drain_timeout', retriable: true });
    expect(await worker.next('cancel')).toEqual({ type: 'cancel', request_id: req.request_id, reason: 'graceful_shutdown' });
    expect(await worker.closed).toEqual({ code: 1000, reason: 'graceful shutdown timed out' });
  });

  it("every error response carries the caller's correlation id", async () => {
    const res = await post(gw.url, '/v1/chat/completions', chat('ghost'), { 'x-correlation-id': 'trace-123' });
    expect(res.headers.get('x-correlation-id')).toBe('trace-123');
  });
});
