import { randomUUID } from 'node:crypto';
import { MAX_DEBT_MS } from '../../src/rate-limit/gcra';
import { startGateway, TestGateway } from '../support/gateway';
import { chat, eventually, post } from '../support/http';
import { autoRespond } from '../support/routing';
import { ScriptedWorker } from '../support/scripted-worker';
import { SHARED_REDIS_URL } from '../rate-limit/support';

/**
 * Issue 16, H1: a worker reporting `token_counts.total_tokens: 9e15` once, for a tenant with a
 * token limit, made every later request of that tenant hang (in memory) and killed the gateway
 * with `RangeError: Invalid time value` (with REDIS_URL). Now the next request is answered, with a
 * sane Retry-After, and the gateway keeps serving everyone else.
 */
describe.each([
  ['in memory', false],
  ['with REDIS_URL', true],
])('H1: an absurd token count from a worker (%s)', (_label, redis) => {
  const tenant = `h1-${randomUUID().slice(0, 8)}`;
  const model = `h1-model-${randomUUID().slice(0, 6)}`;
  let gw: TestGateway;
  let liar: ScriptedWorker;

  beforeAll(async () => {
    gw = await startGateway({
      [`TENANT_RATE_LIMIT_${tenant}`]: '1000tok/min',
      ...(redis ? { REDIS_URL: SHARED_REDIS_URL } : {}),
    });
    if (redis) await eventually(async () => ((await (await fetch(`${gw.url}/health`)).json()) as any).redis?.status === 'ok', 10_000);
    ({ worker: liar } = await ScriptedWorker.register(gw.workerUrl, { models: [model], max_concurrent: 4 }));
    // Every answer claims 9e15 tokens (written as the raw JSON number).
    liar.ws.on('message', (data) => {
      const frame = JSON.parse(data.toString());
      if (frame.type !== 'request') return;
      liar.send(
        `{"type":"response_complete","request_id":"${frame.request_id}","status_code":200,"headers":{"content-type":"application/json"},` +
          `"body":"{\\"choices\\":[]}","token_counts":{"prompt_tokens":9000000000000000,"completion_tokens":9000000000000000,"total_tokens":9000000000000000}}`,
      );
    });
  });
  afterAll(async () => {
    liar?.close();
    await gw?.close();
  });

  it("answers the tenant's next request with a 429 and a sane Retry-After, and the gateway keeps serving", async () => {
    const first = await post(gw.url, '/v1/chat/completions', chat(model), { 'x-tenant-id': tenant });
    expect(first.status).toBe(200);

    const next = await post(gw.url, '/v1/chat/completions', chat(model), { 'x-tenant-id': tenant }, AbortSignal.timeout(10_000));
    expect(next.status).toBe(429);
    expect(next.json.error).toMatchObject({ code: 'rate_limit_exceeded', limit: 1000, remaining: 0 });
    const retryAfter = Number(next.headers.get('retry-after'));
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThan(0);
    // The debt one report can leave is capped: never past 24 h of refill, and one report costs
    // at most one window (the 1-minute token window: a Retry-After of at most 60 s).
    expect(retryAfter).toBeLessThanOrEqual((60_000 + MAX_DEBT_MS) / 1000);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(Date.parse(next.json.error.reset_at)).toBeLessThanOrEqual(Date.now() + 2 * 60_000 + 5_000);
    expect(next.headers.get('x-ratelimit-reset-tokens')).toMatch(/^\d+m\d+s$/);

    // Still up: the same tenant is answered again, other tenants are served, health is fine.
    expect((await post(gw.url, '/v1/chat/completions', chat(model), { 'x-tenant-id': tenant }, AbortSignal.timeout(10_000))).status).toBe(429);
    const { worker: honest } = await ScriptedWorker.register(gw.workerUrl, { models: [`${model}-ok`], max_concurrent: 4 });
    autoRespond(honest);
    const other = await post(gw.url, '/v1/chat/completions', chat(`${model}-ok`), { 'x-tenant-id': `${tenant}-other` }, AbortSignal.timeout(10_000));
    expect(other.status).toBe(200);
    expect((await fetch(`${gw.url}/health/ready`)).status).toBe(200);
    honest.close();
  });
});
