import { startGateway, TestGateway } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { chat, post, sleep } from '../support/http';

/** Issue 22: the model-runner API's request and response headers (../shared/spec/model-runner-api.txt). */
describe('runner-API headers on inference requests and responses', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({});
  });
  afterAll(() => gw.close());

  it('accepts X-Cache-Mode prefix|none|auto and forwards it; anything else is 400 invalid_request naming the header', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['cache-mode'] });
    for (const mode of ['prefix', 'none', 'auto']) {
      const pending = post(gw.url, '/v1/chat/completions', chat('cache-mode'), { 'x-cache-mode': mode, 'x-cache-tag': 't'.repeat(64) });
      const req = await worker.next('request', (f) => f.headers['x-cache-mode'] === mode);
      expect(req.headers['x-cache-tag']).toBe('t'.repeat(64));
      worker.complete(req.request_id, {});
      expect((await pending).status).toBe(200);
    }
    const bad = await post(gw.url, '/v1/chat/completions', chat('cache-mode'), { 'x-cache-mode': 'prefer' });
    expect(bad.status).toBe(400);
    expect(bad.json.error).toMatchObject({ code: 'invalid_request', param: 'x-cache-mode', message: expect.stringContaining('x-cache-mode') });
    const long = await post(gw.url, '/v1/chat/completions', chat('cache-mode'), { 'x-cache-tag': 't'.repeat(65) });
    expect(long.status).toBe(400);
    expect(long.json.error).toMatchObject({ code: 'invalid_request', param: 'x-cache-tag', message: expect.stringContaining('64') });
    const anthropic = await post(gw.url, '/v1/messages', { model: 'cache-mode', max_tokens: 1, messages: [] }, { 'x-cache-mode': 'PREFIX!' });
    expect(anthropic.status).toBe(400);
    expect(anthropic.json.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_request' });
    worker.close();
  });

  it('answers X-Cache-Hit/X-Cache-Tokens-Reused (false/0 when the backend said nothing), X-Queue-Wait-Ms and X-GPU-Time-Ms', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['cache-resp'] });
    const plain = post(gw.url, '/v1/chat/completions', chat('cache-resp'));
    const firstId = (await worker.next('request')).request_id;
    worker.complete(firstId, {});
    const res = await plain;
    expect(res.headers.get('x-cache-hit')).toBe('false');
    expect(res.headers.get('x-cache-tokens-reused')).toBe('0');
    expect(res.headers.get('x-queue-wait-ms')).toBe('0');
    expect(res.headers.get('x-gpu-time-ms')).toMatch(/^\d+$/);

    const hit = post(gw.url, '/v1/chat/completions', chat('cache-resp'));
    const req = await worker.next('request', (f) => f.request_id !== firstId);
    await sleep(120); // held by the worker: without a negotiated gpu_time_ms, X-GPU-Time-Ms is this hold
    worker.send({
      type: 'response_complete',
      request_id: req.request_id,
      status_code: 200,
      headers: { 'content-type': 'application/json', 'x-cache-hit': 'HIT', 'x-cache-tokens-reused': '1234', 'x-gpu-time-ms': '1' },
      body: '{}',
      gpu_time_ms: 5, // not negotiated: ignored
    });
    const hitRes = await hit;
    expect(hitRes.headers.get('x-cache-hit')).toBe('true');
    expect(hitRes.headers.get('x-cache-tokens-reused')).toBe('1234');
    expect(Number(hitRes.headers.get('x-gpu-time-ms'))).toBeGreaterThanOrEqual(100);
    worker.close();
  });

  it('an error answer carries X-Cache-Hit false and X-Cache-Tokens-Reused 0 too (refused header, unknown model, invalid body)', async () => {
    const refused = await post(gw.url, '/v1/chat/completions', chat('cache-err'), { 'x-cache-mode': 'prefer' });
    const unknown = await post(gw.url, '/v1/chat/completions', chat('no-such-model-anywhere'));
    const invalid = await fetch(`${gw.url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model": ' });
    expect([refused.status, unknown.status, invalid.status]).toEqual([400, 404, 400]);
    for (const res of [refused, unknown, invalid]) {
      expect(res.headers.get('x-cache-hit')).toBe('false');
      expect(res.headers.get('x-cache-tokens-reused')).toBe('0');
    }
  });

  it("reports the worker's own gpu_time_ms as X-GPU-Time-Ms once the gpu_time feature is negotiated", async () => {
    const { worker, ack } = await ScriptedWorker.register(gw.workerUrl, { models: ['gpu-time'], features: ['gpu_time'] });
    expect(ack.features).toEqual(['gpu_time']);
    const pending = post(gw.url, '/v1/chat/completions', chat('gpu-time'));
    const req = await worker.next('request');
    await sleep(50);
    worker.complete(req.request_id, {}, 200, { gpu_time_ms: 7 });
    expect((await pending).headers.get('x-gpu-time-ms')).toBe('7');
    worker.close();
  });

  it('carries the cache headers and X-Queue-Wait-Ms on a stream', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['cache-stream'], features: ['response_start'] });
    const pending = post(gw.url, '/v1/chat/completions', chat('cache-stream', { stream: true }));
    const req = await worker.next('request');
    worker.send({
      type: 'response_start',
      request_id: req.request_id,
      status_code: 200,
      headers: { 'content-type': 'text/event-stream', 'x-cache-hit': 'true' },
    });
    worker.chunk(req.request_id, 'data: [DONE]\n\n');
    worker.send({ type: 'response_complete', request_id: req.request_id, status_code: 200 });
    const res = await pending;
    expect(res.headers.get('x-cache-hit')).toBe('true');
    expect(res.headers.get('x-cache-tokens-reused')).toBe('0');
    expect(res.headers.get('x-queue-wait-ms')).toBe('0');
    worker.close();
  });
});
