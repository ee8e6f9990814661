import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { startGateway, TestGateway } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { chat, eventually, post, sleep } from '../support/http';
import { autoRespond, metricValue, writeConfig } from '../support/routing';

const CONFIG = `
tenants:
  limited: {rpm: 10}
  tokens: {tpm: 100}
  budget: {tokens_per_day: 50}
  capped: {max_priority: normal}
  small: {max_queued: 2}
  lowdefault: {priority: low}
queue:
  aging_secs: 3600
`;

describe('tenancy at admission: tenants, limits, priorities, fairness', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({ CONFIG_FILE: writeConfig(CONFIG), QUEUE_TIMEOUT_SECS: '20', MAX_QUEUE_LEN: '500' });
  });
  afterAll(() => gw.close());

  it('forwards the resolved tenant to the worker and answers x-queue-wait-ms on every response', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['ten-fwd'] });
    const pending = post(gw.url, '/v1/chat/completions', chat('ten-fwd'), { 'x-tenant-id': 'team-a', 'x-priority': 'high', 'x-cache-mode': 'prefix' });
    const req = await worker.next('request');
    expect(req.headers).toMatchObject({ 'x-tenant-id': 'team-a', 'x-priority': 'high', 'x-cache-mode': 'prefix' });
    worker.complete(req.request_id, { ok: true });
    const res = await pending;
    expect(res.status).toBe(200);
    expect(res.headers.get('x-queue-wait-ms')).toBe('0');
    const anon = post(gw.url, '/v1/chat/completions', chat('ten-fwd'));
    const anonReq = await worker.next('request');
    expect(anonReq.headers['x-tenant-id']).toBe('default');
    worker.complete(anonReq.request_id, {});
    await anon;
    const unknown = await post(gw.url, '/v1/chat/completions', chat('no-such-model-anywhere'));
    expect(unknown.headers.get('x-queue-wait-ms')).toBe('0');
    worker.close();
  });

  it.each([
    ['an over-long tenant id', { 'x-tenant-id': 't'.repeat(65) }, 'x-tenant-id'],
    ['a tenant id with a slash', { 'x-tenant-id': 'a/b' }, 'x-tenant-id'],
    ['an unknown priority word', { 'x-priority': 'urgent' }, 'x-priority'],
  ])('refuses %s with a clear 400 in the caller dialect', async (_label, headers, param) => {
    const res = await post(gw.url, '/v1/chat/completions', chat('anything'), headers as Record<string, string>);
    expect(res.status).toBe(400);
    expect(res.json.error).toMatchObject({ code: 'invalid_request', param });
    const anthropic = await post(gw.url, '/v1/messages', { model: 'x', max_tokens: 1, messages: [] }, headers as Record<string, string>);
    expect(anthropic.json).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', code: 'invalid_request' } });
  });

  it('rpm 10 with 100 parallel requests: exactly 10 pass, the rest are 429 rate_limit_exceeded with headers and fields', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['rpm-model'], max_concurrent: 100 });
    autoRespond(worker);
    const results = await Promise.all(Array.from({ length: 100 }, () => post(gw.url, '/v1/chat/completions', chat('rpm-model'), { 'x-tenant-id': 'limited' })));
    const ok = results.filter((r) => r.status === 200);
    const limited = results.filter((r) => r.status === 429);
    expect(ok).toHaveLength(10);
    expect(limited).toHaveLength(90);
    expect(worker.count('request')).toBe(10);
    for (const r of [...ok, ...limited]) expect(r.headers.get('x-ratelimit-limit-requests')).toBe('10');
    const refused = limited[0];
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(refused.headers.get('x-ratelimit-remaining-requests')).toBe('0');
    expect(refused.headers.get('x-ratelimit-reset-requests')).toMatch(/^\d+(\.\d+)?(ms|s)$|^\d+m\d+s$/);
    expect(refused.json.error).toMatchObject({
      code: 'rate_limit_exceeded',
      type: 'rate_limit_error',
      retriable: true,
      limit: 10,
      remaining: 0,
      reset_at: expect.any(String),
      retry_after_ms: expect.any(Number),
    });
    expect(await metricValue(gw, 'switchboard_rate_limited_total', { tenant: 'limited', kind: 'requests' })).toBe(90);
    // The SDKs see a RateLimitError.
    const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'k', maxRetries: 0, defaultHeaders: { 'x-tenant-id': 'limited' } });
    const err = await openai.chat.completions.create(chat('rpm-model') as never).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    const anthropic = new Anthropic({ baseURL: gw.url, apiKey: 'k', maxRetries: 0, defaultHeaders: { 'x-tenant-id': 'limited' } });
    const aerr = await anthropic.messages.create({ model: 'rpm-model', max_tokens: 1, messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(aerr).toBeInstanceOf(Anthropic.RateLimitError);
    worker.close();
  });

  it("token limits are charged from the worker's token_counts: a window over its limit refuses the next request", async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['tok-model'] });
    const first = post(gw.url, '/v1/chat/completions', chat('tok-model'), { 'x-tenant-id': 'tokens' });
    const req = await worker.next('request');
    worker.complete(req.request_id, { ok: 1 }, 200, { token_counts: { prompt_tokens: 90, completion_tokens: 40, total_tokens: 130 } });
    const res = await first;
    expect(res.status).toBe(200);
    expect(res.headers.get('x-ratelimit-limit-tokens')).toBe('100');
    const next = await post(gw.url, '/v1/chat/completions', chat('tok-model'), { 'x-tenant-id': 'tokens' });
    expect(next.status).toBe(429);
    expect(next.json.error).toMatchObject({ code: 'rate_limit_exceeded', limit: 100 });
    expect(next.headers.get('x-ratelimit-remaining-tokens')).toBe('0');
    worker.close();
  });

  it('a daily token budget answers 429 budget_exceeded once spent', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['budget-model'] });
    const first = post(gw.url, '/v1/chat/completions', chat('budget-model'), { 'x-tenant-id': 'budget' });
    const req = await worker.next('request');
    worker.complete(req.request_id, {}, 200, { token_counts: { total_tokens: 60 } });
    await first;
    const next = await post(gw.url, '/v1/chat/completions', chat('budget-model'), { 'x-tenant-id': 'budget' });
    expect(next.status).toBe(429);
    expect(next.json.error).toMatchObject({ code: 'budget_exceeded', retriable: true, limit: 50 });
    worker.close();
  });

  it("fairness: tenant A's burst of 100 queued requests does not starve tenant B's later requests", async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['fair-model'], max_concurrent: 1 });
    const gate = post(gw.url, '/v1/chat/completions', chat('fair-model', { who: 'gate' }), { 'x-tenant-id': 'a' });
    const gateReq = await worker.next('request');
    const burst = Array.from({ length: 100 }, (_, i) => post(gw.url, '/v1/chat/completions', chat('fair-model', { who: `a${i}` }), { 'x-tenant-id': 'a' }));
    await sleep(100);
    const late = [0, 1].map((i) => post(gw.url, '/v1/chat/completions', chat('fair-model', { who: `b${i}` }), { 'x-tenant-id': 'b' }));
    await sleep(50);
    const served: string[] = [];
    worker.complete(gateReq.request_id, {});
    for (let i = 0; i < 102; i++) {
      const r = await worker.next('request');
      served.push(JSON.parse(r.body).who);
      worker.complete(r.request_id, {});
    }
    await Promise.all([gate, ...burst, ...late]);
    expect(served.indexOf('b0')).toBeLessThan(3);
    expect(served.indexOf('b1')).toBeLessThan(5);
    expect(served.filter((w) => w.startsWith('a'))).toEqual(Array.from({ length: 100 }, (_, i) => `a${i}`));
    worker.close();
  });

  it('x-priority orders the queue (high before normal before low), capped by the tenant max_priority and defaulting to the tenant priority', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['prio-model'], max_concurrent: 1 });
    const gate = post(gw.url, '/v1/chat/completions', chat('prio-model', { who: 'gate' }));
    const gateReq = await worker.next('request');
    const queued = [
      post(gw.url, '/v1/chat/completions', chat('prio-model', { who: 'low' }), { 'x-priority': 'low' }),
      post(gw.url, '/v1/chat/completions', chat('prio-model', { who: 'tenant-default-low' }), { 'x-tenant-id': 'lowdefault' }),
      post(gw.url, '/v1/chat/completions', chat('prio-model', { who: 'capped-high' }), { 'x-tenant-id': 'capped', 'x-priority': 'high' }),
      post(gw.url, '/v1/chat/completions', chat('prio-model', { who: 'high' }), { 'x-priority': 'high' }),
    ];
    await sleep(150);
    worker.complete(gateReq.request_id, {});
    const served: string[] = [];
    for (let i = 0; i < queued.length; i++) {
      const r = await worker.next('request');
      served.push(JSON.parse(r.body).who);
      worker.complete(r.request_id, {});
    }
    await Promise.all([gate, ...queued]);
    // Within low, tenants take turns: "default" was served last (its high request), so the other goes first.
    expect(served).toEqual(['high', 'capped-high', 'tenant-default-low', 'low']);
    worker.close();
  });

  it("max_queued bounds one tenant's share of the queue: its next request is 429 queue_full, others still queue", async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['share-model'], max_concurrent: 1 });
    const gate = post(gw.url, '/v1/chat/completions', chat('share-model'));
    const gateReq = await worker.next('request');
    const mine = [0, 1].map(() => post(gw.url, '/v1/chat/completions', chat('share-model'), { 'x-tenant-id': 'small' }));
    await eventually(async () => ((await (await fetch(`${gw.url}/health`)).json()) as any).queue_depth >= 2);
    const over = await post(gw.url, '/v1/chat/completions', chat('share-model'), { 'x-tenant-id': 'small' });
    expect(over.status).toBe(429);
    expect(over.json.error).toMatchObject({ code: 'queue_full', retriable: true, queue_depth: 2, avg_wait_ms: expect.any(Number) });
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    const other = post(gw.url, '/v1/chat/completions', chat('share-model'), { 'x-tenant-id': 'someone-else' });
    await sleep(50);
    worker.complete(gateReq.request_id, {});
    for (let i = 0; i < 3; i++) {
      const r = await worker.next('request');
      worker.complete(r.request_id, {});
    }
    expect((await other).status).toBe(200);
    const waited = Number((await mine[0]).headers.get('x-queue-wait-ms'));
    expect(waited).toBeGreaterThan(0);
    await Promise.all([gate, ...mine]);
    worker.close();
  });
});
