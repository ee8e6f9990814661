import { randomUUID } from 'node:crypto';
import { RateLimiter } from '../../src/rate-limit';
import { startGateway, TestGateway } from '../support/gateway';
import { chat, post } from '../support/http';
import { autoRespond } from '../support/routing';
import { ScriptedWorker } from '../support/scripted-worker';

/**
 * Issue 16, "any failure inside admission answers the client": the limiter is the real one with a
 * fault injected (it throws, or its Promise rejects as a Redis client does when the server is
 * gone). Before, the reply had been taken over, so the client waited forever, and the rejection
 * was unhandled.
 */
describe('a failure inside admission', () => {
  const tenant = `adm-${randomUUID().slice(0, 8)}`;
  const model = 'adm-model';
  let gw: TestGateway;
  let limiter: RateLimiter;
  let worker: ScriptedWorker;
  beforeAll(async () => {
    gw = await startGateway({ [`TENANT_RATE_LIMIT_${tenant}`]: '100req/min,5000tok/min' });
    limiter = gw.app.get(RateLimiter);
    ({ worker } = await ScriptedWorker.register(gw.workerUrl, { models: [model], max_concurrent: 4 }));
    autoRespond(worker);
  });
  afterEach(() => jest.restoreAllMocks());
  afterAll(async () => {
    worker?.close();
    await gw?.close();
  });

  const send = (path: string, body: unknown) =>
    post(gw.url, path, body, { 'x-tenant-id': tenant, 'anthropic-version': '2023-06-01' }, AbortSignal.timeout(10_000));

  it('answers 500 internal_error in the caller dialect when the limiter throws', async () => {
    jest.spyOn(limiter, 'tryConsume').mockImplementation(() => {
      throw new TypeError('limiter exploded');
    });
    const openai = await send('/v1/chat/completions', chat(model));
    expect(openai.status).toBe(500);
    expect(openai.json.error).toMatchObject({ code: 'internal_error', type: 'server_error', message: 'Internal error' });
    expect(openai.text).not.toContain('exploded');
    const anthropic = await send('/v1/messages', { model, max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] });
    expect(anthropic.status).toBe(500);
    expect(anthropic.json).toMatchObject({ type: 'error', error: { type: 'api_error', code: 'internal_error' } });
  });

  it('answers 503 dependency_unavailable (retriable, with Retry-After) when the limiter rejects with a connection error', async () => {
    jest
      .spyOn(limiter, 'tryConsume')
      .mockImplementation(() => Promise.reject(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6379'), { code: 'ECONNREFUSED' })));
    const res = await send('/v1/chat/completions', chat(model));
    expect(res.status).toBe(503);
    expect(res.json.error).toMatchObject({ code: 'dependency_unavailable', retriable: true });
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(res.text).not.toContain('6379');
  });

  it('keeps serving once the limiter works again', async () => {
    expect((await send('/v1/chat/completions', chat(model))).status).toBe(200);
  });
});
