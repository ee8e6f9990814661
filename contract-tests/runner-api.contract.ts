/**
 * Contract: the model-runner API surface of the gateway (../shared/spec/model-runner-api.txt,
 * issue 22) — cache request headers validated and forwarded; X-Cache-Hit, X-Cache-Tokens-Reused,
 * X-Queue-Wait-Ms and X-GPU-Time-Ms on every answer (false/0 when the backend said nothing;
 * the worker's negotiated `gpu_time_ms` when it reports one); the seed's names in the
 * backpressure bodies (`queue_full`: queueDepth, avgWaitMs; `rate_limit_exceeded`: resetAt) and
 * in GET /health (status "healthy", uptime, modelsLoaded, queueDepth).
 */
import { randomUUID } from 'node:crypto';
import { expectAnthropicError, expectOpenAiError } from './support/expect-error';
import { Scope, useScope } from './support/scope';
import { spawnGateway, SpawnedGateway } from './support/server';
import { chatBody, messagesBody, uniqueModel } from './support/util';

describe('runner API: request and response headers', () => {
  const scope = useScope();

  test('X-Cache-Mode prefix|none|auto and X-Cache-Tag (≤ 64 characters) reach the worker unchanged', async () => {
    const model = uniqueModel('cache-mode');
    const w = await scope.worker({ models: [model] });
    for (const mode of ['prefix', 'none', 'auto']) {
      const x = scope.post('/v1/chat/completions', chatBody(model), { 'X-Cache-Mode': mode, 'X-Cache-Tag': `session-${'a'.repeat(56)}` });
      const req = await w.nextRequest();
      expect(req.headers['x-cache-mode']).toBe(mode);
      expect(req.headers['x-cache-tag']).toBe(`session-${'a'.repeat(56)}`);
      w.respondJson(req.request_id, { ok: true });
      expect((await x.done).status).toBe(200);
    }
  });

  test('any other X-Cache-Mode, or an X-Cache-Tag over 64 characters, is 400 invalid_request naming the header, in both dialects', async () => {
    const model = uniqueModel('cache-bad');
    const w = await scope.worker({ models: [model] });
    const refused = await scope.post('/v1/chat/completions', chatBody(model), { 'X-Cache-Mode': 'always' }).done;
    const mode = expectOpenAiError(refused, 400, 'invalid_request');
    expect(refused.headers['x-cache-hit']).toBe('false');
    expect(refused.headers['x-cache-tokens-reused']).toBe('0');
    expect(mode.param).toBe('x-cache-mode');
    expect(mode.message).toContain('x-cache-mode');
    const tag = expectOpenAiError(await scope.post('/v1/chat/completions', chatBody(model), { 'X-Cache-Tag': 't'.repeat(65) }).done, 400, 'invalid_request');
    expect(tag.param).toBe('x-cache-tag');
    expect(tag.message).toContain('x-cache-tag');
    const anthropic = expectAnthropicError(await scope.post('/v1/messages', messagesBody(model), { 'X-Cache-Mode': 'always' }).done, 400, 'invalid_request');
    expect(anthropic.message).toContain('x-cache-mode');
    expect(w.requests()).toEqual([]);
  });

  test('every answer carries X-Cache-Hit/X-Cache-Tokens-Reused (false/0 when the backend said nothing), X-Queue-Wait-Ms and X-GPU-Time-Ms', async () => {
    const model = uniqueModel('cache-resp');
    const w = await scope.worker({ models: [model] });
    const plain = scope.post('/v1/chat/completions', chatBody(model));
    w.respondJson((await w.nextRequest()).request_id, { ok: true });
    const res = await plain.done;
    expect(res.headers['x-cache-hit']).toBe('false');
    expect(res.headers['x-cache-tokens-reused']).toBe('0');
    expect(res.headers['x-queue-wait-ms']).toMatch(/^\d+$/);
    expect(res.headers['x-gpu-time-ms']).toMatch(/^\d+$/);

    const hit = scope.post('/v1/chat/completions', chatBody(model));
    const req = await w.nextRequest();
    w.complete(req.request_id, { headers: { 'content-type': 'application/json', 'x-cache-hit': 'true', 'x-cache-tokens-reused': '1234' }, body: '{}' });
    const hitRes = await hit.done;
    expect(hitRes.headers['x-cache-hit']).toBe('true');
    expect(hitRes.headers['x-cache-tokens-reused']).toBe('1234');
  });

  test("X-GPU-Time-Ms is the worker's gpu_time_ms once the gpu_time feature is negotiated", async () => {
    const model = uniqueModel('gpu-time');
    const w = await scope.worker({ models: [model], extra: { features: ['gpu_time'] } });
    expect(w.ack?.features).toEqual(['gpu_time']);
    const x = scope.post('/v1/chat/completions', chatBody(model));
    const req = await w.nextRequest();
    w.send({
      type: 'response_complete',
      request_id: req.request_id,
      status_code: 200,
      headers: { 'content-type': 'application/json' },
      body: '{}',
      gpu_time_ms: 450,
    });
    expect((await x.done).headers['x-gpu-time-ms']).toBe('450');
  });

  test('a stream carries X-Cache-Hit, X-Cache-Tokens-Reused and X-Queue-Wait-Ms as headers', async () => {
    const model = uniqueModel('cache-stream');
    const w = await scope.worker({ models: [model] });
    const x = scope.post('/v1/chat/completions', chatBody(model, { stream: true }));
    const req = await w.nextRequest();
    w.chunk(req.request_id, 'data: {"choices":[]}\n\n');
    const head = await x.response;
    expect(head.headers['x-cache-hit']).toBe('false');
    expect(head.headers['x-cache-tokens-reused']).toBe('0');
    expect(head.headers['x-queue-wait-ms']).toMatch(/^\d+$/);
    w.chunk(req.request_id, 'data: [DONE]\n\n');
    w.complete(req.request_id);
    expect((await x.done).status).toBe(200);
  });

  test("queue_full carries the seed's queueDepth and avgWaitMs beside queue_depth and avg_wait_ms, and a message naming them", async () => {
    const model = uniqueModel('seed-full');
    const p = await scope.provider({ models: [model], max_queue_len: 1, queue_timeout_secs: 20 }, 'seedfull');
    scope.post('/v1/chat/completions', chatBody(model));
    await scope.admin.waitQueueDepth(p.name, 1);
    const full = await scope.post('/v1/chat/completions', chatBody(model)).done;
    const err = expectOpenAiError(full, 429, 'queue_full');
    // An error is an inference answer too: it says "no cache hit".
    expect(full.headers['x-cache-hit']).toBe('false');
    expect(full.headers['x-cache-tokens-reused']).toBe('0');
    expect(err).toMatchObject({ queue_depth: 1, queueDepth: 1, avg_wait_ms: expect.any(Number), avgWaitMs: err.avg_wait_ms });
    expect(err.message).toContain('queue depth 1');
    expect(err.message).toMatch(/average wait \d+ ms/);
  });
});

describe('runner API: seed names on a gateway of its own (tenant limit, max_queue_len 0)', () => {
  const tenant = `seed-${randomUUID().slice(0, 8)}`;
  let gw: SpawnedGateway;
  let scope: Scope;
  beforeAll(async () => {
    gw = await spawnGateway({ label: 'runner-api', env: { [`TENANT_RATE_LIMIT_${tenant}`]: '1req/min', MAX_QUEUE_LEN: '0' } });
    scope = new Scope({ baseUrl: gw.url, wsUrl: gw.wsUrl, adminToken: gw.env.ADMIN_TOKEN });
  });
  afterEach(() => scope.cleanup());
  afterAll(() => gw.stop('SIGTERM'));

  test('GET /health is 200 "healthy" on an idle gateway with MAX_QUEUE_LEN=0, with the seed\'s uptime, modelsLoaded and queueDepth', async () => {
    const res = await fetch(`${gw.url}/health`);
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body).toMatchObject({ status: 'healthy', queueDepth: 0, queue_depth: 0, modelsLoaded: 0, models_loaded: 0 });
    expect(body.uptime).toBe(body.uptime_secs);
  });

  test("rate_limit_exceeded carries the seed's resetAt (epoch seconds) beside reset_at, and a message naming the tenant and the limit", async () => {
    const model = uniqueModel('seed-rl');
    const w = await scope.worker({ models: [model] }, { secret: gw.env.WORKER_SECRET, provider: 'local' });
    const first = scope.post('/v1/chat/completions', chatBody(model), { 'x-tenant-id': tenant });
    w.respondJson((await w.nextRequest()).request_id, { ok: true });
    expect((await first.done).status).toBe(200);
    const err = expectOpenAiError(await scope.post('/v1/chat/completions', chatBody(model), { 'x-tenant-id': tenant }).done, 429, 'rate_limit_exceeded');
    expect(err).toMatchObject({ limit: 1, remaining: 0, resetAt: expect.any(Number) });
    expect(err.resetAt).toBe(Math.ceil(Date.parse(err.reset_at) / 1000));
    expect(err.resetAt).toBeGreaterThan(Date.now() / 1000 - 1);
    expect(err.message).toContain(tenant);
    expect(err.message).toContain('1 req/min');
  });
});
