import { startGateway, TestGateway, TEST_ADMIN_TOKEN } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { admin, chat, post, sleep } from '../support/http';

const OK_BODY = { id: 'x', object: 'chat.completion', choices: [] };

// Split from lifecycle.e2e-spec.ts: the slot grace period, gateway shutdown, hostile worker responses, requeue
// order, and providers (several serving one model, disabled, created through the admin API).

describe('slot release after the cancel grace period', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({ CANCEL_GRACE_SECS: '0.2' });
  });
  afterAll(() => gw.close());

  it("frees a cancelled request's slot after the grace period even if the worker stays silent", async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['grace'] });
    const abort = new AbortController();
    const first = post(gw.url, '/v1/chat/completions', chat('grace'), {}, abort.signal).catch((e) => e);
    await worker.next('request');
    abort.abort();
    await first;
    await worker.next('cancel');
    const second = post(gw.url, '/v1/chat/completions', chat('grace'));
    const req2 = await worker.next('request');
    worker.complete(req2.request_id, OK_BODY);
    expect((await second).status).toBe(200);
    worker.close();
  });
});

describe('gateway shutdown (SIGTERM path)', () => {
  it('turns unready, drains workers, answers in-flight requests, then closes', async () => {
    const gw = await startGateway({ SHUTDOWN_DRAIN_TIMEOUT_SECS: '5' });
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['bye'] });
    const inFlight = post(gw.url, '/v1/chat/completions', chat('bye'));
    const req = await worker.next('request');
    expect((await fetch(`${gw.url}/health/ready`)).status).toBe(200);
    const closing = gw.close();
    const notice = await worker.next('graceful_shutdown');
    expect(notice.reason).toBe('server_shutdown');
    expect((await fetch(`${gw.url}/health/ready`)).status).toBe(503);
    const refused = await post(gw.url, '/v1/chat/completions', chat('bye'));
    expect(refused.status).toBe(503);
    expect(refused.json.error.code).toBe('server_shutdown');
    worker.complete(req.request_id, OK_BODY);
    expect((await inFlight).status).toBe(200);
    expect(await worker.closed).toEqual({ code: 1000, reason: 'graceful shutdown complete' });
    await closing;
  });
});

describe('hostile or broken worker responses', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway();
  });
  afterAll(() => gw.close());

  it('drops response headers Node cannot send instead of crashing, and keeps serving', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['evil-headers'] });
    const pending = post(gw.url, '/v1/chat/completions', chat('evil-headers'));
    const req = await worker.next('request');
    worker.complete(req.request_id, OK_BODY, 200, {
      headers: { 'content-type': 'application/json\r\nx-injected: 1', 'x-bad name': 'v', 'x-fine': 'ok', 'x-latin': 'caf\u0107' },
    });
    const res = await pending;
    expect(res.status).toBe(200);
    expect(res.json).toEqual(OK_BODY);
    expect(res.headers.get('x-fine')).toBe('ok');
    expect(res.headers.get('x-injected')).toBeNull();
    expect((await fetch(`${gw.url}/health/live`)).status).toBe(200);
    worker.close();
  });

  it('answers 502 worker_error for an interim 1xx status instead of leaving the client waiting', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['interim'] });
    const pending = post(gw.url, '/v1/chat/completions', chat('interim'));
    const req = await worker.next('request');
    worker.complete(req.request_id, '', 103);
    const res = await pending;
    expect(res.status).toBe(502);
    expect(res.json.error.code).toBe('worker_error');
    worker.close();
  });

  it('relays a 204 without a body or a stale content-length', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['empty'] });
    const pending = post(gw.url, '/v1/chat/completions', chat('empty'));
    const req = await worker.next('request');
    worker.complete(req.request_id, 'ignored', 204, { headers: {} });
    const res = await pending;
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    worker.close();
  });
});

describe('requeue order', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway();
  });
  afterAll(() => gw.close());

  it('serves the requests of a dead worker in their original arrival order', async () => {
    const doomed = await ScriptedWorker.register(gw.workerUrl, { models: ['order'], max_concurrent: 3 });
    const pending: Array<Promise<unknown>> = [];
    for (const n of [1, 2, 3]) {
      pending.push(post(gw.url, '/v1/chat/completions', chat('order', { n })));
      await doomed.worker.next('request');
    }
    doomed.worker.kill();
    await doomed.worker.closed;
    const next = await ScriptedWorker.register(gw.workerUrl, { models: ['order'], max_concurrent: 1 });
    const served: number[] = [];
    for (let i = 0; i < 3; i++) {
      const req = await next.worker.next('request');
      served.push(JSON.parse(req.body).n);
      next.worker.complete(req.request_id, OK_BODY);
    }
    expect(served).toEqual([1, 2, 3]);
    await Promise.all(pending);
    next.worker.close();
  });
});

describe('several providers serving one model', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway();
    const res = await admin(gw.url, 'POST', '/admin/providers', TEST_ADMIN_TOKEN, { name: 'second', secret: 'second-secret' });
    expect(res.status).toBe(201);
  });
  afterAll(() => gw.close());

  it('lets a worker of any provider take a queued request for its model', async () => {
    const a = await ScriptedWorker.register(gw.workerUrl, { models: ['shared'] });
    const b = await ScriptedWorker.register(gw.workerUrl, { models: ['shared'] }, { provider: 'second', secret: 'second-secret' });
    const p1 = post(gw.url, '/v1/chat/completions', chat('shared', { n: 1 }));
    const p2 = post(gw.url, '/v1/chat/completions', chat('shared', { n: 2 }));
    const first = await a.worker.next('request');
    const second = await b.worker.next('request');
    const p3 = post(gw.url, '/v1/chat/completions', chat('shared', { n: 3 })); // queued: both busy
    await sleep(50);
    // Whichever queue it waits in, the first worker to free up serves it.
    b.worker.complete(second.request_id, OK_BODY);
    const third = await b.worker.next('request');
    expect(JSON.parse(third.body).n).toBe(3);
    b.worker.complete(third.request_id, OK_BODY);
    a.worker.complete(first.request_id, OK_BODY);
    expect((await Promise.all([p1, p2, p3])).map((r) => r.status)).toEqual([200, 200, 200]);
    a.worker.close();
    b.worker.close();
  });
});

describe('disabling a provider', () => {
  // Own gateway: a recently seen `*` worker elsewhere would make every model "known" and queue.
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway();
  });
  afterAll(() => gw.close());

  it('hides the models of a disabled provider from /v1/models and answers provider_disabled', async () => {
    await admin(gw.url, 'POST', '/admin/providers', TEST_ADMIN_TOKEN, { name: 'pausable', secret: 'pausable-secret' });
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['pausable-model'] }, { provider: 'pausable', secret: 'pausable-secret' });
    const ids = async () => ((await (await fetch(`${gw.url}/v1/models`)).json()) as any).data.map((m: { id: string }) => m.id);
    expect(await ids()).toContain('pausable-model');
    expect((await admin(gw.url, 'PATCH', '/admin/providers/pausable', TEST_ADMIN_TOKEN, { enabled: false })).status).toBe(200);
    expect(await ids()).not.toContain('pausable-model');
    const res = await post(gw.url, '/v1/chat/completions', chat('pausable-model'));
    expect(res.status).toBe(503);
    expect(res.json.error.code).toBe('provider_disabled');
    expect(worker.count('request')).toBe(0);
    worker.close();
  });
});

describe('providers created through the admin API', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({ MAX_QUEUE_LEN: '7', QUEUE_TIMEOUT_SECS: '5' });
  });
  afterAll(() => gw.close());

  it('get the configured default limits', async () => {
    const res = await admin(gw.url, 'POST', '/admin/providers', TEST_ADMIN_TOKEN, { name: 'fresh' });
    expect(res.status).toBe(201);
    expect(res.json).toMatchObject({ name: 'fresh', max_queue_len: 7, queue_timeout_secs: 5, has_secret: false });
    const bad = await admin(gw.url, 'POST', '/admin/providers', TEST_ADMIN_TOKEN, { name: 'huge', queue_timeout_secs: 1e9 });
    expect(bad.status).toBe(422);
    expect(bad.json.error).toMatchObject({ code: 'validation_failed', fields: [expect.objectContaining({ field: 'queue_timeout_secs' })] });
  });
});
