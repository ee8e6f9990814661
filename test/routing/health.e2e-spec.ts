import { startGateway, TestGateway, TEST_ADMIN_TOKEN } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { admin, chat, eventually, post, RawResponse, sleep } from '../support/http';
import { metricValue, OK_BODY, workerView, writeConfig } from '../support/routing';

const EJECTIONS = 'switchboard_worker_ejections_total';

/** Sends a request for `model`, which only `worker` serves, and has the worker fail it before any byte. */
async function failOnce(gw: TestGateway, worker: ScriptedWorker, model: string, code = 'backend_response_failed'): Promise<RawResponse> {
  const pending = post(gw.url, '/v1/chat/completions', chat(model));
  const req = await worker.next('request');
  worker.send({ type: 'error', request_id: req.request_id, code, message: 'backend failed' });
  return pending;
}

async function serveOnce(gw: TestGateway, worker: ScriptedWorker, model: string): Promise<RawResponse> {
  const pending = post(gw.url, '/v1/chat/completions', chat(model));
  const req = await worker.next('request');
  worker.complete(req.request_id, OK_BODY);
  return pending;
}

async function gone(gw: TestGateway, workerId: string): Promise<void> {
  await eventually(async () => (await workerView(gw, workerId)) === undefined);
}

describe('worker health: ejection after failures in a row, recovery after the cooldown', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({
      CONFIG_FILE: writeConfig(`
providers:
  - name: local
    secret: test-worker-secret
routing:
  eject_after_failures: 3
  eject_cooldown_secs: 0.5
  eject_max_cooldown_secs: 1.5
  fallbacks:
    hb-primary: [hb-fallback]
`),
    });
  });
  afterAll(() => gw.close());

  it('ejects a worker after 3 error frames in a row; it takes no new work, and takes work again after the cooldown', async () => {
    const a = await ScriptedWorker.register(gw.workerUrl, { models: ['ej-shared', 'ej-a'], max_concurrent: 4 });
    const b = await ScriptedWorker.register(gw.workerUrl, { models: ['ej-shared'], max_concurrent: 4 });
    const ejectionsBefore = await metricValue(gw, EJECTIONS, { provider: 'local' });
    for (let i = 1; i <= 2; i++) {
      const res = await failOnce(gw, a.worker, 'ej-a');
      expect(res.status).toBe(502);
      expect(res.json.error).toMatchObject({ code: 'worker_error' });
      expect(await workerView(gw, a.ack.worker_id)).toMatchObject({ consecutive_failures: i, ejected: false, ejected_until: null });
    }
    expect((await failOnce(gw, a.worker, 'ej-a')).status).toBe(502);
    const view = await workerView(gw, a.ack.worker_id);
    expect(view).toMatchObject({ consecutive_failures: 3, ejected: true });
    expect(Date.parse(view.ejected_until)).toBeGreaterThan(Date.now() - 1000);
    expect(await metricValue(gw, EJECTIONS, { provider: 'local' })).toBe(ejectionsBefore + 1);

    // While ejected: shared requests all go to B, and A's own model has no healthy worker.
    const aCount = a.worker.count('request');
    for (let i = 0; i < 4; i++) expect((await serveOnce(gw, b.worker, 'ej-shared')).status).toBe(200);
    const refused = await post(gw.url, '/v1/chat/completions', chat('ej-a'));
    if (refused.status !== 503) throw new Error(`expected 503 while ejected, got ${refused.status} (the cooldown may have ended: slow machine?)`);
    expect(refused.json.error).toMatchObject({ code: 'no_healthy_worker', retriable: true });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(a.worker.count('request')).toBe(aCount);

    // After the cooldown A takes work again, and a success resets its failure count.
    await eventually(async () => (await workerView(gw, a.ack.worker_id)).ejected === false);
    expect((await serveOnce(gw, a.worker, 'ej-a')).status).toBe(200);
    const recovered = await workerView(gw, a.ack.worker_id);
    expect(recovered).toMatchObject({ consecutive_failures: 0, ejected: false, ejected_until: null });
    expect(typeof recovered.latency_ms).toBe('number');
    a.worker.close();
    b.worker.close();
  });

  it('a 5xx response_complete with no chunk before counts as a failure', async () => {
    const { worker, ack } = await ScriptedWorker.register(gw.workerUrl, { models: ['ej-5xx'] });
    for (let i = 0; i < 3; i++) {
      const pending = post(gw.url, '/v1/chat/completions', chat('ej-5xx'));
      const req = await worker.next('request');
      worker.complete(req.request_id, { error: { message: 'backend exploded' } }, 503);
      expect((await pending).status).toBe(503);
    }
    expect(await workerView(gw, ack.worker_id)).toMatchObject({ consecutive_failures: 3, ejected: true });
    worker.close();
  });

  it('a 5xx response_complete after a chunk does not count (non-streaming request)', async () => {
    const { worker, ack } = await ScriptedWorker.register(gw.workerUrl, { models: ['ej-5xx-chunk'] });
    for (let i = 0; i < 3; i++) {
      const pending = post(gw.url, '/v1/chat/completions', chat('ej-5xx-chunk'));
      const req = await worker.next('request');
      worker.chunk(req.request_id, '{"error":{"message":"partial');
      worker.send({ type: 'response_complete', request_id: req.request_id, status_code: 500 });
      expect((await pending).status).toBe(500);
    }
    expect(await workerView(gw, ack.worker_id)).toMatchObject({ consecutive_failures: 0, ejected: false });
    worker.close();
  });

  it('a 5xx response_complete after a chunk does not count (streaming request)', async () => {
    const { worker, ack } = await ScriptedWorker.register(gw.workerUrl, { models: ['ej-5xx-stream'] });
    for (let i = 0; i < 3; i++) {
      const pending = post(gw.url, '/v1/chat/completions', chat('ej-5xx-stream', { stream: true }));
      const req = await worker.next('request');
      worker.chunk(req.request_id, 'data: {"choices":[]}\n\n');
      worker.send({ type: 'response_complete', request_id: req.request_id, status_code: 500 });
      expect((await pending).status).toBe(200);
    }
    expect(await workerView(gw, ack.worker_id)).toMatchObject({ consecutive_failures: 0, ejected: false });
    worker.close();
  });

  it('a disconnect with a request in flight counts as a failure, and a reconnect under the same name keeps the count', async () => {
    const name = 'gpu-crashy';
    const ejectionsBefore = await metricValue(gw, EJECTIONS, { provider: 'local' });
    let current = await ScriptedWorker.register(gw.workerUrl, { models: ['ej-crash'], worker_name: name });
    const request = post(gw.url, '/v1/chat/completions', chat('ej-crash'));
    for (let failures = 1; failures <= 3; failures++) {
      await current.worker.next('request');
      current.worker.kill();
      await gone(gw, current.ack.worker_id);
      // The request is requeued and waits for a worker of its (recently served) model.
      if (failures === 3) await sleep(700); // the third failure ejects the name for 0.5 s: reconnect after it
      current = await ScriptedWorker.register(gw.workerUrl, { models: ['ej-crash'], worker_name: name });
      expect((await workerView(gw, current.ack.worker_id)).consecutive_failures).toBe(failures);
    }
    expect(await metricValue(gw, EJECTIONS, { provider: 'local' })).toBe(ejectionsBefore + 1);
    // The waiting request reaches the reconnected worker.
    const req = await current.worker.next('request');
    current.worker.complete(req.request_id, OK_BODY);
    expect((await request).status).toBe(200);
    expect((await workerView(gw, current.ack.worker_id)).consecutive_failures).toBe(0);
    current.worker.close();
  });

  it('the cooldown doubles while the worker keeps failing, up to eject_max_cooldown_secs, and a success resets it', async () => {
    const { worker, ack } = await ScriptedWorker.register(gw.workerUrl, { models: ['ej-double'] });
    /** Fails `n` requests; returns the length of the resulting ejection, bounded by the times around it. */
    const ejectionAfter = async (n: number) => {
      for (let i = 0; i < n - 1; i++) expect((await failOnce(gw, worker, 'ej-double')).status).toBe(502);
      const t0 = Date.now();
      expect((await failOnce(gw, worker, 'ej-double')).status).toBe(502);
      const view = await workerView(gw, ack.worker_id);
      const t1 = Date.now();
      expect(view.ejected_until).not.toBeNull();
      const until = Date.parse(view.ejected_until);
      return { atLeast: until - t1, atMost: until - t0 };
    };
    const recovered = () => eventually(async () => (await workerView(gw, ack.worker_id)).ejected === false, 5000);

    const first = await ejectionAfter(3);
    expect(first.atMost).toBeGreaterThanOrEqual(500);
    expect(first.atLeast).toBeLessThanOrEqual(500);
    await recovered();
    const second = await ejectionAfter(1); // still failing: one more failure ejects it again, for twice as long
    expect(second.atMost).toBeGreaterThanOrEqual(1000);
    expect(second.atLeast).toBeLessThanOrEqual(1000);
    await recovered();
    const third = await ejectionAfter(1); // 2000 ms capped at eject_max_cooldown_secs (1.5)
    expect(third.atMost).toBeGreaterThanOrEqual(1500);
    expect(third.atLeast).toBeLessThanOrEqual(1500);
    await recovered();
    expect((await serveOnce(gw, worker, 'ej-double')).status).toBe(200);
    // Reset: it takes 3 failures again, and the cooldown starts over.
    for (let i = 0; i < 2; i++) expect((await failOnce(gw, worker, 'ej-double')).status).toBe(502);
    expect((await workerView(gw, ack.worker_id)).ejected).toBe(false);
    const fresh = await ejectionAfter(1);
    expect(fresh.atMost).toBeGreaterThanOrEqual(500);
    expect(fresh.atLeast).toBeLessThanOrEqual(500);
    worker.close();
  });

  it('a model whose workers are all ejected falls back to its fallback chain', async () => {
    const primary = await ScriptedWorker.register(gw.workerUrl, { models: ['hb-primary'] });
    const fallback = await ScriptedWorker.register(gw.workerUrl, { models: ['hb-fallback'] });
    for (let i = 0; i < 3; i++) expect((await failOnce(gw, primary.worker, 'hb-primary')).status).toBe(502);
    const pending = post(gw.url, '/v1/chat/completions', chat('hb-primary'));
    const req = await fallback.worker.next('request');
    expect(req.model).toBe('hb-fallback');
    fallback.worker.complete(req.request_id, OK_BODY);
    const res = await pending;
    expect(res.status).toBe(200);
    expect(res.headers.get('x-switchboard-fallback')).toBe('hb-primary');
    primary.worker.close();
    fallback.worker.close();
  });

  it('503 no_healthy_worker with Retry-After when the only worker of a model is draining', async () => {
    const { worker, ack } = await ScriptedWorker.register(gw.workerUrl, { models: ['ej-drain'], max_concurrent: 2 });
    const held = post(gw.url, '/v1/chat/completions', chat('ej-drain'));
    const req = await worker.next('request');
    expect((await admin(gw.url, 'POST', `/admin/workers/${ack.worker_id}/drain`, TEST_ADMIN_TOKEN, { timeout_secs: 10 })).status).toBe(202);
    const res = await post(gw.url, '/v1/chat/completions', chat('ej-drain'));
    expect(res.status).toBe(503);
    expect(res.json.error).toMatchObject({ code: 'no_healthy_worker', retriable: true });
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(worker.count('request')).toBe(1);
    worker.complete(req.request_id, OK_BODY);
    expect((await held).status).toBe(200);
    await worker.closed;
  });
});

describe('a request queued while its worker is ejected is served when the cooldown ends (pull path)', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({
      QUEUE_TIMEOUT_SECS: '3',
      CONFIG_FILE: writeConfig(`
providers:
  - name: local
    secret: test-worker-secret
routing:
  eject_after_failures: 1
  eject_cooldown_secs: 0.1
  eject_max_cooldown_secs: 0.1
`),
    });
  });
  afterAll(() => gw.close());

  it('every time: 30 cycles of eject → queue a request → cooldown ends → the worker takes it', async () => {
    // `flaky` fails every request for `pq-fail` and answers every `pq-shared` request at once;
    // `busy` serves `pq-shared` too but its only slot stays taken, so `pq-shared` requests queue while
    // `flaky` is ejected. When the cooldown ends, the queued request must reach `flaky`; otherwise it
    // waits until the queue timeout (3 s) and fails with 504 although a healthy worker is idle.
    const flaky = await ScriptedWorker.register(gw.workerUrl, { models: ['pq-shared', 'pq-fail'] });
    const busy = await ScriptedWorker.register(gw.workerUrl, { models: ['pq-shared', 'pq-busy'] });
    flaky.worker.ws.on('message', (data) => {
      const frame = JSON.parse(data.toString());
      if (frame.type !== 'request') return;
      if (frame.model === 'pq-fail') flaky.worker.send({ type: 'error', request_id: frame.request_id, code: 'backend_response_failed', message: 'x' });
      else flaky.worker.complete(frame.request_id, OK_BODY);
    });
    const held = post(gw.url, '/v1/chat/completions', chat('pq-busy'));
    const heldReq = await busy.worker.next('request');
    const outcomes: number[] = [];
    for (let cycle = 0; cycle < 30; cycle++) {
      expect((await post(gw.url, '/v1/chat/completions', chat('pq-fail'))).status).toBe(502); // ejects flaky
      const res = await post(gw.url, '/v1/chat/completions', chat('pq-shared', { cycle }));
      outcomes.push(res.status);
      if (res.status !== 200) {
        const view = await workerView(gw, flaky.ack.worker_id);
        throw new Error(
          `cycle ${cycle}: ${res.status} ${res.json?.error?.code}; the worker was ejected=${view.ejected}, in_flight=${view.in_flight} (statuses so far: ${outcomes.join(',')})`,
        );
      }
    }
    expect(busy.worker.count('request')).toBe(1);
    busy.worker.complete(heldReq.request_id, OK_BODY);
    expect((await held).status).toBe(200);
    flaky.worker.close();
    busy.worker.close();
  });
});

describe('worker health is kept per worker name within a provider', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({
      CONFIG_FILE: writeConfig(`
providers:
  - name: local
    secret: test-worker-secret
routing:
  eject_cooldown_secs: 60
  eject_max_cooldown_secs: 60
`),
    });
  });
  afterAll(() => gw.close());

  it('a worker that reconnects under the same name is still ejected', async () => {
    const first = await ScriptedWorker.register(gw.workerUrl, { models: ['phoenix-model'], worker_name: 'phoenix' });
    for (let i = 0; i < 3; i++) expect((await failOnce(gw, first.worker, 'phoenix-model')).status).toBe(502);
    expect((await workerView(gw, first.ack.worker_id)).ejected).toBe(true);
    first.worker.close();
    await gone(gw, first.ack.worker_id);
    const again = await ScriptedWorker.register(gw.workerUrl, { models: ['phoenix-model'], worker_name: 'phoenix' });
    expect(await workerView(gw, again.ack.worker_id)).toMatchObject({ ejected: true, consecutive_failures: 3 });
    const res = await post(gw.url, '/v1/chat/completions', chat('phoenix-model'));
    expect(res.status).toBe(503);
    expect(res.json.error.code).toBe('no_healthy_worker');
    expect(again.worker.count('request')).toBe(0);
    // Another name is another worker: it starts healthy.
    const other = await ScriptedWorker.register(gw.workerUrl, { models: ['phoenix-model'], worker_name: 'phoenix-2' });
    expect(await workerView(gw, other.ack.worker_id)).toMatchObject({ ejected: false, consecutive_failures: 0 });
    expect((await serveOnce(gw, other.worker, 'phoenix-model')).status).toBe(200);
    again.worker.close();
    other.worker.close();
  });

  it('two workers connected at once under one name are tracked separately', async () => {
    const x1 = await ScriptedWorker.register(gw.workerUrl, { models: ['twin-shared', 'twin-x1'], worker_name: 'twin' });
    const x2 = await ScriptedWorker.register(gw.workerUrl, { models: ['twin-shared'], worker_name: 'twin' });
    for (let i = 0; i < 3; i++) expect((await failOnce(gw, x1.worker, 'twin-x1')).status).toBe(502);
    expect(await workerView(gw, x1.ack.worker_id)).toMatchObject({ ejected: true, consecutive_failures: 3 });
    expect(await workerView(gw, x2.ack.worker_id)).toMatchObject({ ejected: false, consecutive_failures: 0 });
    for (let i = 0; i < 3; i++) expect((await serveOnce(gw, x2.worker, 'twin-shared')).status).toBe(200);
    expect(x1.worker.count('request')).toBe(3);
    x1.worker.close();
    x2.worker.close();
  });

  it('the same name in another provider is another worker', async () => {
    expect((await admin(gw.url, 'POST', '/admin/providers', TEST_ADMIN_TOKEN, { name: 'other-pool', secret: 'other-pool-secret' })).status).toBe(201);
    const local = await ScriptedWorker.register(gw.workerUrl, { models: ['np-model'], worker_name: 'namesake' });
    for (let i = 0; i < 3; i++) expect((await failOnce(gw, local.worker, 'np-model')).status).toBe(502);
    const elsewhere = await ScriptedWorker.register(
      gw.workerUrl,
      { models: ['np-model'], worker_name: 'namesake' },
      { provider: 'other-pool', secret: 'other-pool-secret' },
    );
    expect(await workerView(gw, elsewhere.ack.worker_id)).toMatchObject({ ejected: false, consecutive_failures: 0 });
    expect((await serveOnce(gw, elsewhere.worker, 'np-model')).status).toBe(200);
    local.worker.close();
    elsewhere.worker.close();
  });
});
