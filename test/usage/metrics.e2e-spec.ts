import { parsePrometheusText, Sample } from '../observability/prometheus-text';
import { chat, post } from '../support/http';
import { startGateway, TestGateway } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { TypeOrmUsageRecorder } from '../../src/usage/usage-recorder.service';

/** Backend cache metrics and the tenant label, as /metrics shows them after real traffic. */
describe('cache and tenant metrics', () => {
  let gw: TestGateway;
  let worker: ScriptedWorker;

  beforeAll(async () => {
    gw = await startGateway();
    ({ worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['cached-model', 'plain-model'], max_concurrent: 2 }));
  });
  afterAll(async () => {
    worker?.close();
    await gw?.close();
  });

  async function samples(family: string): Promise<Sample[]> {
    const text = await (await fetch(`${gw.url}/metrics`)).text();
    return parsePrometheusText(text).get(family)?.samples ?? [];
  }
  const value = (list: Sample[], labels: Record<string, string>) => list.find((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;

  /** A non-streaming request whose worker answers with `headers`. */
  async function answeredWith(model: string, headers: Record<string, string>, tenant?: string) {
    const pending = post(gw.url, '/v1/chat/completions', chat(model), tenant ? { 'x-tenant-id': tenant } : {});
    const req = await worker.next('request');
    worker.complete(req.request_id, { ok: true }, 200, { headers: { 'content-type': 'application/json', ...headers } });
    return pending;
  }

  it('counts cache hits and misses per provider and model from x-cache-hit, and reused tokens from x-cache-tokens-reused', async () => {
    const hit = await answeredWith('cached-model', { 'x-cache-hit': 'true', 'x-cache-tokens-reused': '64' });
    // The headers still reach the client as the backend sent them.
    expect(hit.status).toBe(200);
    expect(hit.headers.get('x-cache-hit')).toBe('true');
    expect(hit.headers.get('x-cache-tokens-reused')).toBe('64');
    await answeredWith('cached-model', { 'x-cache-hit': 'HIT', 'x-cache-tokens-reused': '36' });
    await answeredWith('cached-model', { 'x-cache-hit': '0' });
    await answeredWith('cached-model', { 'x-cache-hit': 'miss' });
    await answeredWith('cached-model', { 'x-cache-hit': 'perhaps' }); // unreadable: not counted
    await answeredWith('plain-model', {}); // the backend says nothing about a cache

    // Streamed: the headers come with the completion, after the chunks.
    const stream = post(gw.url, '/v1/chat/completions', chat('cached-model', { stream: true }));
    const streamed = await worker.next('request');
    worker.chunk(streamed.request_id, 'data: {"choices":[]}\n\n');
    worker.send({
      type: 'response_complete',
      request_id: streamed.request_id,
      status_code: 200,
      headers: { 'x-cache-hit': '1', 'x-cache-tokens-reused': '100' },
    });
    expect((await stream).status).toBe(200);

    const results = await samples('switchboard_cache_hits_total');
    const cached = { provider: 'local', model: 'cached-model' };
    expect(value(results, { ...cached, result: 'hit' })).toBe(3);
    expect(value(results, { ...cached, result: 'miss' })).toBe(2);
    expect(value(results, { model: 'plain-model' })).toBeUndefined();
    const reused = await samples('switchboard_cache_tokens_reused_total');
    expect(value(reused, cached)).toBe(200);
    expect(value(reused, { model: 'plain-model' })).toBeUndefined();
  });

  it('labels switchboard_requests_total with the tenant', async () => {
    await answeredWith('plain-model', {}, 'team-red');
    await answeredWith('plain-model', {}, 'team-red');
    await answeredWith('plain-model', {}, 'team-blue');
    expect((await post(gw.url, '/v1/chat/completions', chat('nobody-serves-this'), { 'x-tenant-id': 'team-blue' })).status).toBe(404);

    const requests = await samples('switchboard_requests_total');
    const ok = { provider: 'local', model: 'plain-model', endpoint: '/v1/chat/completions', status: '200' };
    expect(value(requests, { ...ok, tenant: 'team-red' })).toBe(2);
    expect(value(requests, { ...ok, tenant: 'team-blue' })).toBe(1);
    expect(value(requests, { provider: 'none', model: '(unrouted)', status: '404', tenant: 'team-blue' })).toBe(1);
    // Requests that name no tenant count under `default`.
    expect(value(requests, { ...ok, tenant: 'default' })).toBe(1);
  });

  it('exposes the usage pipeline: records written, none dropped, nothing left buffered', async () => {
    await gw.app.get(TypeOrmUsageRecorder).flush();
    expect(value(await samples('switchboard_usage_records_written_total'), {})).toBeGreaterThanOrEqual(11);
    const dropped = await samples('switchboard_usage_records_dropped_total');
    expect(value(dropped, { reason: 'buffer_full' })).toBe(0);
    expect(value(dropped, { reason: 'write_failed' })).toBe(0);
    expect(value(await samples('switchboard_usage_records_buffered'), {})).toBe(0);
    // Defined for the rate limiter, which counts its refusals; none here.
    expect(await samples('switchboard_rate_limited_total')).toEqual([]);
  });
});
