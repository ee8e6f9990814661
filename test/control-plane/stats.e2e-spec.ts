import { startGateway, TestGateway } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { chat, eventually, post } from '../support/http';
import { call, createPool, OK_BODY } from './support';

/** GET /admin/stats after known traffic: per pool, and what no pool took. */
describe('admin stats', () => {
  let gw: TestGateway;
  beforeEach(async () => {
    gw = await startGateway({ MAX_QUEUE_LEN: '1', QUEUE_TIMEOUT_SECS: '10', CANCEL_GRACE_SECS: '30' });
  });
  afterEach(() => gw.close());

  const poolStats = async (pool: string) => (await call(gw, 'GET', '/admin/stats')).json.pools.find((p: { pool: string }) => p.pool === pool);

  it('counts served, cancelled, rejections and errors by code, queue waits, tokens, in flight and queue depth per pool', async () => {
    await createPool(gw, 'east');
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['sm'], max_concurrent: 1 });

    // Served: two answers with token counts, one a backend 500 (served, and an error for the rate).
    for (const [status, prompt, completion] of [
      [200, 10, 5],
      [500, 3, 0],
    ]) {
      const pending = post(gw.url, '/v1/chat/completions', chat('sm'));
      const req = await worker.next('request');
      worker.complete(req.request_id, OK_BODY, status, { token_counts: { prompt_tokens: prompt, completion_tokens: completion } });
      expect((await pending).status).toBe(status);
    }

    // One running, one waiting (the queue holds one), one refused 429 queue_full.
    const running = post(gw.url, '/v1/chat/completions', chat('sm'));
    const r1 = await worker.next('request');
    const waiting = post(gw.url, '/v1/chat/completions', chat('sm'));
    await eventually(async () => (await poolStats('local')).queue_depth === 1);
    const full = await post(gw.url, '/v1/chat/completions', chat('sm'));
    expect(full.status).toBe(429);

    const during = await poolStats('local');
    expect(during).toMatchObject({ pool: 'local', draining: false, workers: 1, queue_depth: 1, in_flight: 1 });

    // The waiting request is served once the slot frees: it waited in the queue.
    worker.complete(r1.request_id, OK_BODY, 200, { token_counts: { prompt_tokens: 1, completion_tokens: 1 } });
    expect((await running).status).toBe(200);
    const r2 = await worker.next('request');
    worker.complete(r2.request_id, OK_BODY);
    expect((await waiting).status).toBe(200);

    // A client that leaves mid-request counts as cancelled.
    const controller = new AbortController();
    const abandoned = post(gw.url, '/v1/chat/completions', chat('sm'), {}, controller.signal).catch(() => undefined);
    const r3 = await worker.next('request');
    controller.abort();
    await abandoned;
    await worker.next('cancel');
    worker.complete(r3.request_id, '', 499);

    // Nothing serves this one, and no pool knows it.
    expect((await post(gw.url, '/v1/chat/completions', chat('nobody-serves-this'))).status).toBe(404);

    const res = await call(gw, 'GET', '/admin/stats');
    expect(res.status).toBe(200);
    expect(typeof res.json.since).toBe('string');
    const local = res.json.pools.find((p: { pool: string }) => p.pool === 'local');
    expect(local).toMatchObject({
      pool: 'local',
      draining: false,
      workers: 1,
      queue_depth: 0,
      in_flight: 0,
      served: 4,
      cancelled: 1,
      rejected_by_code: { queue_full: 1 },
      errors_by_code: { queue_full: 1 },
      tokens: { prompt: 14, completion: 6, total: 20 },
      requests_per_min: 6,
    });
    // 500 from the backend: 1 of 6; the 429 is not a server error.
    expect(local.error_rate).toBeCloseTo(1 / 6, 3);
    // Only the request that waited counts toward the waits.
    expect(local.queue_wait_ms.avg).toBeGreaterThan(0);
    expect(local.queue_wait_ms.p95).toBeGreaterThanOrEqual(local.queue_wait_ms.avg);
    expect(res.json.pools.find((p: { pool: string }) => p.pool === 'east')).toEqual({
      pool: 'east',
      draining: false,
      workers: 0,
      queue_depth: 0,
      in_flight: 0,
      served: 0,
      cancelled: 0,
      rejected_by_code: {},
      errors_by_code: {},
      queue_wait_ms: { avg: 0, p95: 0 },
      tokens: { prompt: 0, completion: 0, total: 0 },
      requests_per_min: 0,
      error_rate: 0,
      latency_ms: { p50: null, p90: null, p95: null, p99: null, samples: 0 },
      history: {
        bucket_secs: 10,
        start: expect.any(String),
        requests: new Array(30).fill(0),
        errors: new Array(30).fill(0),
        latency_p50_ms: new Array(30).fill(null),
        latency_p95_ms: new Array(30).fill(null),
      },
    });
    // The four served requests (the backend 500 included) have durations; the history holds all six.
    expect(local.latency_ms.samples).toBe(4);
    expect(local.latency_ms.p50).toEqual(expect.any(Number));
    expect(local.history.requests.reduce((a: number, b: number) => a + b, 0)).toBe(6);
    expect(local.history.errors.reduce((a: number, b: number) => a + b, 0)).toBe(1);
    expect(res.json.unrouted).toEqual({ rejected_by_code: { model_not_found: 1 }, errors_by_code: { model_not_found: 1 } });
    // Error answers, newest first, with their correlation ids: the unrouted 404, the 429 and the backend 500.
    expect(res.json.recent_errors.map((e: { code: string | null; status: number; pool: string | null }) => [e.code, e.status, e.pool])).toEqual([
      ['model_not_found', 404, null],
      ['queue_full', 429, 'local'],
      [null, 500, 'local'],
    ]);
    for (const e of res.json.recent_errors) expect(e.correlation_id).toEqual(expect.any(String));
    worker.close();
  });

  it('requests refused because a pool is drained count as pool_unavailable for that pool', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['du'] });
    expect((await call(gw, 'POST', '/v1/pools/local/drain', { deadline_ms: 1000 })).status).toBe(202);
    await worker.closed;
    for (let i = 0; i < 2; i++) expect((await post(gw.url, '/v1/chat/completions', chat('du'))).status).toBe(503);
    // A request pinned to the drained pool is refused before any routing, and counted for it too.
    expect((await post(gw.url, '/v1/chat/completions', chat('du'), { 'x-switchboard-provider': 'local' })).status).toBe(503);
    const local = await poolStats('local');
    expect(local).toMatchObject({ draining: true, rejected_by_code: { pool_unavailable: 3 }, errors_by_code: { pool_unavailable: 3 }, error_rate: 1 });
    const health = (await call(gw, 'GET', '/v1/pools/local/health')).json.metrics;
    expect(health).toMatchObject({ requests_per_min: 3, error_rate: 1 });
  });
});
