import { startGateway, TestGateway } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { chat, post } from '../support/http';

/** Every error carries its taxonomy kind; retriable ones a retry hint; stream errors the §3.3 fields. */
describe('error taxonomy', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway();
  });
  afterAll(() => gw.close());

  it('a pre-stream error keeps its dialect shape and adds kind, pool_id, engine and a retry hint (OpenAI)', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['tax-model'] });
    const pending = post(gw.url, '/v1/chat/completions', chat('tax-model'));
    const req = await worker.next('request');
    worker.send({ type: 'error', request_id: req.request_id, code: 'backend_response_failed', message: 'reset' });
    const res = await pending;
    expect(res.status).toBe(502);
    expect(res.json.error).toMatchObject({
      code: 'worker_error',
      kind: 'WORKER_RESET',
      pool_id: 'local',
      retriable: true,
      retry_after_ms: expect.any(Number),
      type: 'server_error',
    });
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(res.headers.get('x-backoff-ms')).toBe(String(res.json.error.retry_after_ms));
    worker.close();
  });

  it('names the engine the worker reported, in the Anthropic dialect', async () => {
    const worker = await ScriptedWorker.connect(gw.workerUrl);
    worker.send({
      type: 'register',
      worker_name: 'vllm-box',
      models: ['tax-anth'],
      max_concurrent: 1,
      protocol_version: '2026-04-bridge-v1',
      runner: { type: 'vllm', version: '0.9.0' },
    });
    await worker.next('register_ack');
    const pending = post(gw.url, '/v1/messages', { model: 'tax-anth', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] });
    const req = await worker.next('request');
    worker.send({ type: 'error', request_id: req.request_id, code: 'backend_response_failed', message: 'reset' });
    const res = await pending;
    expect(res.json).toMatchObject({
      type: 'error',
      error: { type: 'api_error', code: 'worker_error', kind: 'WORKER_RESET', pool_id: 'local', engine: 'vllm', retriable: true },
    });
    worker.close();
  });

  it('non-retriable errors carry their kind and no retry hint', async () => {
    const res = await post(gw.url, '/v1/chat/completions', chat('no-such-model-here'));
    expect(res.json.error).toMatchObject({ code: 'model_not_found', kind: 'INVALID_PARAMS', retriable: false });
    expect(res.json.error.retry_after_ms).toBeUndefined();
    expect(res.headers.get('retry-after')).toBeNull();
  });

  it('after the stream started, the SSE error event carries code, kind, retriable, retry_after_ms and message at the top level', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['tax-stream'] });
    const pending = post(gw.url, '/v1/chat/completions', chat('tax-stream', { stream: true }));
    const req = await worker.next('request');
    worker.chunk(req.request_id, 'data: {"choices":[{"delta":{"content":"Hel"}}]}\n\n');
    await new Promise((r) => setTimeout(r, 30));
    worker.kill();
    const res = await pending;
    expect(res.status).toBe(200);
    const event = res.text.split('\n\n').find((e) => e.startsWith('event: error'))!;
    const data = JSON.parse(
      event
        .split('\n')
        .find((l) => l.startsWith('data: '))!
        .slice(6),
    );
    expect(data).toMatchObject({
      code: 'worker_disconnected',
      kind: 'WORKER_RESET',
      retriable: true,
      retry_after_ms: expect.any(Number),
      message: 'The worker disconnected during the response',
      error: { code: 'worker_disconnected', kind: 'WORKER_RESET', pool_id: 'local', type: 'server_error' },
    });
    expect(res.text.endsWith(`${event}\n\n`)).toBe(true); // nothing after the error event
  });
});
