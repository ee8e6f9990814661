import { CloseReasons } from '../../src/protocol';
import { startGateway, TestGateway } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { chat, eventually, post } from '../support/http';
import { autoRespond } from '../support/routing';
import { call, createPool, OK_BODY, refusedRegistration, withoutToken } from './support';

/**
 * Pools on the control plane: /v1/pools/:id/health, drain (cordon) and undrain, through HTTP with
 * scripted workers on real loopback ports.
 */
describe('pools: health, drain and undrain', () => {
  let gw: TestGateway;
  beforeEach(async () => {
    gw = await startGateway({ HEARTBEAT_INTERVAL_SECS: '0.2', HEARTBEAT_TIMEOUT_SECS: '5', QUEUE_TIMEOUT_SECS: '10' });
  });
  afterEach(() => gw.close());

  const workerIds = async () => (await call(gw, 'GET', '/admin/workers')).json.data.map((w: { id: string }) => w.id);

  it('every pool route needs the admin token (401 without it or with a wrong one) and answers with it', async () => {
    const routes: Array<[string, string, number]> = [
      ['GET', '/v1/pools', 200],
      ['GET', '/v1/pools/local/health', 200],
      ['POST', '/v1/pools/local/drain', 202],
      ['POST', '/v1/pools/local/undrain', 200],
    ];
    for (const [method, path, ok] of routes) {
      expect(await withoutToken(gw, method, path)).toEqual([401, 401]);
      expect((await call(gw, method, path, method === 'POST' ? {} : undefined)).status).toBe(ok);
    }
  });

  it('unknown pools are 404 not_found on every route, before the body is judged', async () => {
    for (const [method, path, body] of [
      ['GET', '/v1/pools/nope/health', undefined],
      ['POST', '/v1/pools/nope/drain', { deadline_ms: 'not a number' }],
      ['POST', '/v1/pools/nope/undrain', undefined],
    ] as const) {
      const res = await call(gw, method, path, body);
      expect(res.status).toBe(404);
      expect(res.json.error).toMatchObject({ code: 'not_found', retriable: false });
      expect(res.json.error.message).toBe("Pool 'nope' not found");
    }
  });

  it('health of an idle pool without workers: not live, not ready, zeros', async () => {
    const res = await call(gw, 'GET', '/v1/pools/local/health');
    expect(res.json).toEqual({
      id: 'local',
      live: false,
      ready: false,
      draining: false,
      enabled: true,
      cordon: null,
      metrics: { queue_depth: 0, in_flight: 0, slots: { total: 0, busy: 0, free: 0 }, workers: 0, requests_per_min: 0, error_rate: 0 },
    });
  });

  it('health numbers after traffic: requests and 5xx share of the last minute, slots, in flight, queue depth', async () => {
    const { worker: a } = await ScriptedWorker.register(gw.workerUrl, { models: ['hm'], max_concurrent: 2 });
    const { worker: b } = await ScriptedWorker.register(gw.workerUrl, { models: ['hm'], max_concurrent: 1 });
    const workers = [a, b];
    // Three answered 200, one answered 500 by the backend.
    for (const status of [200, 200, 200, 500]) {
      const pending = post(gw.url, '/v1/chat/completions', chat('hm'));
      const got = await ScriptedWorker.firstOf(workers, 'request');
      got.worker.complete(got.frame.request_id, OK_BODY, status);
      expect((await pending).status).toBe(status);
    }
    // Fill all three slots and queue a fourth request.
    const held = [0, 1, 2].map(() => post(gw.url, '/v1/chat/completions', chat('hm')));
    const running = [];
    for (let i = 0; i < 3; i++) running.push(await ScriptedWorker.firstOf(workers, 'request'));
    const queued = post(gw.url, '/v1/chat/completions', chat('hm'));
    await eventually(async () => (await call(gw, 'GET', '/v1/pools/local/health')).json.metrics.queue_depth === 1);

    const health = (await call(gw, 'GET', '/v1/pools/local/health')).json;
    expect(health).toMatchObject({ id: 'local', live: true, ready: true, draining: false, cordon: null });
    expect(health.metrics).toEqual({
      queue_depth: 1,
      in_flight: 3,
      slots: { total: 3, busy: 3, free: 0 },
      workers: 2,
      requests_per_min: 4,
      error_rate: 0.25,
    });

    // Answer everything; the queued request takes the first free slot.
    for (const r of running) r.worker.complete(r.frame.request_id, OK_BODY);
    for (const r of held) expect((await r).status).toBe(200);
    const last = await ScriptedWorker.firstOf(workers, 'request');
    last.worker.complete(last.frame.request_id, OK_BODY);
    expect((await queued).status).toBe(200);
    const after = (await call(gw, 'GET', '/v1/pools/local/health')).json.metrics;
    expect(after).toMatchObject({ queue_depth: 0, in_flight: 0, slots: { total: 3, busy: 0, free: 3 }, requests_per_min: 8, error_rate: 0.125 });
    expect((await call(gw, 'GET', '/v1/pools')).json.data).toEqual([expect.objectContaining({ id: 'local', live: true })]);
    a.close();
    b.close();
  });

  it('drain: workers get graceful_shutdown, new requests 503 pool_unavailable with Retry-After, reconnecting workers are refused 1013; undrain lets them back', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['pd'], worker_name: 'gpu-1', max_concurrent: 2 });
    const inFlight = post(gw.url, '/v1/chat/completions', chat('pd'));
    const req = await worker.next('request');

    const drain = await call(gw, 'POST', '/v1/pools/local/drain', { deadline_ms: 5000, reason: 'maintenance' });
    expect(drain.status).toBe(202);
    expect(drain.json).toMatchObject({ id: 'local', draining: true, ready: false, cordon: { reason: 'maintenance', deadline_ms: 5000 } });
    expect(await worker.next('graceful_shutdown')).toEqual({ type: 'graceful_shutdown', reason: 'maintenance', drain_timeout_secs: 5 });

    // New work: refused at once, retriable, naming the pool, with a retry hint.
    const refused = await post(gw.url, '/v1/chat/completions', chat('pd'));
    expect(refused.status).toBe(503);
    expect(refused.json.error).toMatchObject({
      code: 'pool_unavailable',
      kind: 'POOL_UNAVAILABLE',
      retriable: true,
      pool_id: 'local',
      retry_after_ms: 30000,
      type: 'server_error',
    });
    expect(refused.headers.get('retry-after')).toBe('30');
    const anthropic = await post(gw.url, '/v1/messages', { model: 'pd', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] });
    expect(anthropic.status).toBe(503);
    expect(anthropic.json.error).toMatchObject({ type: 'overloaded_error', code: 'pool_unavailable' });
    expect(worker.count('request')).toBe(1);

    // In-flight work finishes, then the worker is closed as after any drain.
    worker.complete(req.request_id, OK_BODY);
    expect((await inFlight).status).toBe(200);
    expect(await worker.closed).toEqual({ code: 1000, reason: 'graceful shutdown complete' });

    // With its workers gone the answer stays pool_unavailable (not 404, not a wait in the queue).
    const later = await post(gw.url, '/v1/chat/completions', chat('pd'));
    expect(later.status).toBe(503);
    expect(later.json.error.code).toBe('pool_unavailable');

    // The same worker reconnecting, and a brand new one, are refused and never registered.
    for (const name of ['gpu-1', 'gpu-2']) {
      const { close, frames } = await refusedRegistration(gw, { worker_name: name, models: ['pd'] });
      expect(close).toEqual({ code: 1013, reason: CloseReasons.CORDONED });
      expect(frames).not.toContain('register_ack');
    }
    expect(await workerIds()).toEqual([]);
    const health = (await call(gw, 'GET', '/v1/pools/local/health')).json;
    expect(health).toMatchObject({ live: false, ready: false, draining: true });

    // Undrain: a worker registers and serves again.
    const undrain = await call(gw, 'POST', '/v1/pools/local/undrain');
    expect(undrain.status).toBe(200);
    expect(undrain.json).toMatchObject({ id: 'local', draining: false, cordon: null });
    const back = await ScriptedWorker.register(gw.workerUrl, { models: ['pd'], worker_name: 'gpu-1' });
    const pending = post(gw.url, '/v1/chat/completions', chat('pd'));
    const r2 = await back.worker.next('request');
    back.worker.complete(r2.request_id, OK_BODY);
    expect((await pending).status).toBe(200);
    expect((await call(gw, 'GET', '/v1/pools/local/health')).json).toMatchObject({ live: true, ready: true, draining: false });
    back.worker.close();
  });

  it('another pool serving the same model keeps serving during a cordon; pinned requests to the cordoned pool are 503 pool_unavailable', async () => {
    const east = await createPool(gw, 'east');
    const local = await ScriptedWorker.register(gw.workerUrl, { models: ['shared'], max_concurrent: 4 });
    const other = await ScriptedWorker.register(gw.workerUrl, { models: ['shared'], max_concurrent: 4 }, east);
    autoRespond(other.worker);
    expect((await call(gw, 'POST', '/v1/pools/local/drain', { deadline_ms: 1000 })).status).toBe(202);
    await local.worker.next('graceful_shutdown');
    for (let i = 0; i < 5; i++) expect((await post(gw.url, '/v1/chat/completions', chat('shared'))).status).toBe(200);
    expect(local.worker.count('request')).toBe(0);
    expect(other.worker.count('request')).toBe(5);

    const pinned = await post(gw.url, '/v1/chat/completions', chat('shared'), { 'x-switchboard-provider': 'local' });
    expect(pinned.status).toBe(503);
    expect(pinned.json.error).toMatchObject({ code: 'pool_unavailable', pool_id: 'local' });
    expect((await post(gw.url, '/v1/chat/completions', chat('shared'), { 'x-switchboard-provider': 'east' })).status).toBe(200);

    // A worker of the other pool may still (re)connect.
    const joiner = await ScriptedWorker.register(gw.workerUrl, { models: ['shared'] }, east);
    expect(joiner.ack.worker_id).toBeDefined();
    joiner.worker.close();
    other.worker.close();
  });

  it('queued requests of a drained pool go to the verdict at once: pool_unavailable without another pool, another pool when there is one', async () => {
    const east = await createPool(gw, 'east');
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['qa', 'qb'], max_concurrent: 1 });
    const first = post(gw.url, '/v1/chat/completions', chat('qa'));
    const r1 = await worker.next('request');
    // `qb` is also served by a busy east worker; `qa` only by the local one.
    const eastWorker = await ScriptedWorker.register(gw.workerUrl, { models: ['qb'], max_concurrent: 1 }, east);
    const eastBusy = post(gw.url, '/v1/chat/completions', chat('qb'), { 'x-switchboard-provider': 'east' });
    const e1 = await eastWorker.worker.next('request');
    const waitingA = post(gw.url, '/v1/chat/completions', chat('qa'));
    await eventually(async () => (await call(gw, 'GET', '/v1/pools/local/health')).json.metrics.queue_depth === 1);
    const waitingB = post(gw.url, '/v1/chat/completions', chat('qb'));
    await eventually(async () => {
      const [l, e] = await Promise.all([call(gw, 'GET', '/v1/pools/local/health'), call(gw, 'GET', '/v1/pools/east/health')]);
      return l.json.metrics.queue_depth + e.json.metrics.queue_depth === 2;
    });

    expect((await call(gw, 'POST', '/v1/pools/local/drain', { deadline_ms: 5000 })).status).toBe(202);
    const a = await waitingA;
    expect(a.status).toBe(503);
    expect(a.json.error.code).toBe('pool_unavailable');
    // `qb` waits for the east worker instead, and gets it when it frees up.
    eastWorker.worker.complete(e1.request_id, OK_BODY);
    expect((await eastBusy).status).toBe(200);
    const e2 = await eastWorker.worker.next('request');
    expect(e2.model).toBe('qb');
    eastWorker.worker.complete(e2.request_id, OK_BODY);
    expect((await waitingB).status).toBe(200);

    worker.complete(r1.request_id, OK_BODY);
    expect((await first).status).toBe(200);
    await worker.closed;
    eastWorker.worker.close();
  });

  it('a worker connected before the pool was cordoned is refused at its register frame', async () => {
    const early = await ScriptedWorker.connect(gw.workerUrl);
    expect((await call(gw, 'POST', '/v1/pools/local/drain', {})).status).toBe(202);
    early.send({ type: 'register', protocol_version: '2026-04-bridge-v1', worker_name: 'late', models: ['x'], max_concurrent: 1 });
    expect(await early.closed).toEqual({ code: 1013, reason: CloseReasons.CORDONED });
  });

  it('deleting a cordoned pool and creating it again starts uncordoned', async () => {
    const opts = await createPool(gw, 'tmp');
    expect((await call(gw, 'POST', '/v1/pools/tmp/drain', {})).status).toBe(202);
    expect((await refusedRegistration(gw, { worker_name: 'w', models: ['t'] }, opts)).close.code).toBe(1013);
    expect((await call(gw, 'DELETE', '/admin/providers/tmp')).status).toBe(200);
    await createPool(gw, 'tmp');
    expect((await call(gw, 'GET', '/v1/pools/tmp/health')).json.draining).toBe(false);
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['t'] }, opts);
    worker.close();
  });
});
