import { startGateway, TestGateway, TEST_ADMIN_TOKEN } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { admin, chat, post, sleep } from '../support/http';

const OK_BODY = { id: 'x', object: 'chat.completion', choices: [] };

describe('request lifecycle: routing, requeue, cancellation, drain', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({ CANCEL_GRACE_SECS: '30', QUEUE_TIMEOUT_SECS: '10', HEARTBEAT_INTERVAL_SECS: '0.1', HEARTBEAT_TIMEOUT_SECS: '0.5' });
  });
  afterAll(() => gw.close());

  it('routes only to workers that serve the exact model, or the * wildcard', async () => {
    const a = await ScriptedWorker.register(gw.workerUrl, { models: ['exact-a'] });
    const any = await ScriptedWorker.register(gw.workerUrl, { models: ['*'] });
    const p1 = post(gw.url, '/v1/chat/completions', chat('exact-a'));
    const r1 = await a.worker.next('request');
    a.worker.complete(r1.request_id, OK_BODY);
    expect((await p1).status).toBe(200);
    const p2 = post(gw.url, '/v1/chat/completions', chat('anything-else'));
    const r2 = await any.worker.next('request');
    expect(r2.model).toBe('anything-else');
    any.worker.complete(r2.request_id, OK_BODY);
    expect((await p2).status).toBe(200);
    expect(a.worker.count('request')).toBe(1);
    const models: any = await (await fetch(`${gw.url}/v1/models`)).json();
    expect(models.object).toBe('list');
    expect(models.data.map((m: { id: string }) => m.id)).toContain('exact-a');
    expect(models.data.map((m: { id: string }) => m.id)).not.toContain('*');
    a.worker.close();
    any.worker.close();
  });

  it('alternates between equally loaded workers (round-robin among ties)', async () => {
    const w1 = await ScriptedWorker.register(gw.workerUrl, { models: ['rr'], worker_name: 'one' });
    const w2 = await ScriptedWorker.register(gw.workerUrl, { models: ['rr'], worker_name: 'two' });
    const served: string[] = [];
    for (let i = 0; i < 4; i++) {
      const pending = post(gw.url, '/v1/chat/completions', chat('rr'));
      const got = await ScriptedWorker.firstOf([w1.worker, w2.worker], 'request');
      served.push(got.worker === w1.worker ? 'one' : 'two');
      got.worker.complete(got.frame.request_id, OK_BODY);
      await pending;
    }
    expect(served[0]).not.toBe(served[1]);
    expect(served[1]).not.toBe(served[2]);
    expect(served[2]).not.toBe(served[3]);
    w1.worker.close();
    w2.worker.close();
  });

  it('prefers the least loaded worker', async () => {
    const busy = await ScriptedWorker.register(gw.workerUrl, { models: ['ll'], max_concurrent: 4 });
    const idle = await ScriptedWorker.register(gw.workerUrl, { models: ['ll'], max_concurrent: 4 });
    const first = post(gw.url, '/v1/chat/completions', chat('ll'));
    const firstReq = await ScriptedWorker.firstOf([busy.worker, idle.worker], 'request');
    const other = firstReq.worker === busy.worker ? idle.worker : busy.worker;
    const second = post(gw.url, '/v1/chat/completions', chat('ll'));
    const secondReq = await other.next('request');
    other.complete(secondReq.request_id, OK_BODY);
    firstReq.worker.complete(firstReq.frame.request_id, OK_BODY);
    expect((await first).status).toBe(200);
    expect((await second).status).toBe(200);
    busy.worker.close();
    idle.worker.close();
  });

  it('queues when every worker is busy and hands the work over when a slot frees (FIFO)', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['fifo'] });
    const p1 = post(gw.url, '/v1/chat/completions', chat('fifo', { n: 1 }));
    const r1 = await worker.next('request');
    const p2 = post(gw.url, '/v1/chat/completions', chat('fifo', { n: 2 }));
    await sleep(30);
    const p3 = post(gw.url, '/v1/chat/completions', chat('fifo', { n: 3 }));
    await sleep(30);
    expect(worker.count('request')).toBe(1);
    worker.complete(r1.request_id, { n: 1 });
    const r2 = await worker.next('request');
    expect(JSON.parse(r2.body).n).toBe(2);
    worker.complete(r2.request_id, { n: 2 });
    const r3 = await worker.next('request');
    expect(JSON.parse(r3.body).n).toBe(3);
    worker.complete(r3.request_id, { n: 3 });
    expect((await p1).json).toEqual({ n: 1 });
    expect((await p2).json).toEqual({ n: 2 });
    expect((await p3).json).toEqual({ n: 3 });
    worker.close();
  });

  it('forwards the raw body and the client headers minus hop-by-hop ones', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['hdr'] });
    const raw = '{"model":"hdr",  "messages":[{"role":"user","content":"é"}],"extra":{"keep":"exactly"}}';
    const pending = post(gw.url, '/v1/chat/completions', raw, {
      authorization: 'Bearer sk-client',
      'OpenAI-Organization': 'org-1',
      'x-correlation-id': 'corr-h',
      connection: 'keep-alive',
      'accept-encoding': 'gzip, br',
    });
    const req = await worker.next('request');
    expect(req.body).toBe(raw);
    expect(req.headers).toMatchObject({
      authorization: 'Bearer sk-client',
      'openai-organization': 'org-1',
      'content-type': 'application/json',
      'x-correlation-id': 'corr-h',
    });
    for (const h of ['host', 'content-length', 'connection', 'transfer-encoding', 'accept-encoding']) expect(req.headers).not.toHaveProperty(h);
    worker.complete(req.request_id, OK_BODY, 201, {
      headers: { 'content-type': 'application/json', 'x-from-backend': 'yes', 'content-encoding': 'gzip', 'transfer-encoding': 'chunked' },
    });
    const res = await pending;
    expect(res.status).toBe(201);
    expect(res.headers.get('x-from-backend')).toBe('yes');
    expect(res.json).toEqual(OK_BODY); // the decoded body is not labelled gzip
    expect(res.headers.get('content-encoding')).toBeNull();
    expect(res.headers.get('x-correlation-id')).toBe('corr-h');
    worker.close();
  });

  it('passes backend 4xx and 5xx through unchanged', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['pass'] });
    for (const status of [422, 500]) {
      const pending = post(gw.url, '/v1/chat/completions', chat('pass'));
      const req = await worker.next('request');
      worker.complete(req.request_id, { error: { message: `backend says ${status}` } }, status);
      const res = await pending;
      expect(res.status).toBe(status);
      expect(res.json).toEqual({ error: { message: `backend says ${status}` } });
    }
    worker.close();
  });

  it('requeues a request whose worker died before the first byte, keeping the request id', async () => {
    const doomed = await ScriptedWorker.register(gw.workerUrl, { models: ['rq'] });
    const pending = post(gw.url, '/v1/chat/completions', chat('rq', { stream: true }));
    const first = await doomed.worker.next('request');
    doomed.worker.kill();
    const rescuer = await ScriptedWorker.register(gw.workerUrl, { models: ['rq'] });
    const again = await rescuer.worker.next('request');
    expect(again.request_id).toBe(first.request_id);
    expect(again.body).toBe(first.body);
    rescuer.worker.chunk(again.request_id, 'data: {"ok":true}\n\n');
    rescuer.worker.complete(again.request_id, '', 200, { body: '' });
    const res = await pending;
    expect(res.status).toBe(200);
    expect(res.text).toBe('data: {"ok":true}\n\n');
    rescuer.worker.close();
  });

  it('requeues the work of a worker closed for heartbeat timeout', async () => {
    const silent = await ScriptedWorker.register(gw.workerUrl, { models: ['hb'] });
    const pending = post(gw.url, '/v1/chat/completions', chat('hb'));
    await silent.worker.next('request');
    // the silent worker never answers pings
    expect(await silent.worker.closed).toEqual({ code: 1000, reason: 'worker heartbeat timed out' });
    const healthy = await ScriptedWorker.register(gw.workerUrl, { models: ['hb'] });
    const keepAlive = setInterval(() => healthy.worker.send({ type: 'pong', current_load: 0 }), 50);
    const req = await healthy.worker.next('request');
    healthy.worker.complete(req.request_id, OK_BODY);
    expect((await pending).status).toBe(200);
    clearInterval(keepAlive);
    healthy.worker.close();
  });

  it('removes a queued request when its client disconnects', async () => {
    const busy = await ScriptedWorker.register(gw.workerUrl, { models: ['cq'] });
    const keepAlive = setInterval(() => busy.worker.send({ type: 'pong', current_load: busy.worker.count('request') - 1 }), 50);
    const p1 = post(gw.url, '/v1/chat/completions', chat('cq'));
    const r1 = await busy.worker.next('request');
    const abort = new AbortController();
    const queued = post(gw.url, '/v1/chat/completions', chat('cq', { queued: true }), {}, abort.signal).catch((e) => e);
    await sleep(50);
    abort.abort();
    await queued;
    await sleep(50);
    busy.worker.complete(r1.request_id, OK_BODY);
    await p1;
    await sleep(100);
    expect(busy.worker.count('request')).toBe(1); // the abandoned request never reached the worker
    clearInterval(keepAlive);
    busy.worker.close();
  });

  it('sends exactly one cancel{client_disconnect} for an in-flight request and drops late chunks', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['cf'] });
    const keepAlive = setInterval(() => worker.send({ type: 'pong', current_load: 1 }), 50);
    const abort = new AbortController();
    const pending = post(gw.url, '/v1/chat/completions', chat('cf', { stream: true }), {}, abort.signal).catch((e) => e);
    const req = await worker.next('request');
    worker.chunk(req.request_id, 'data: {"first":true}\n\n');
    await sleep(50);
    abort.abort();
    await pending;
    const cancel = await worker.next('cancel');
    expect(cancel).toEqual({ type: 'cancel', request_id: req.request_id, reason: 'client_disconnect' });
    worker.chunk(req.request_id, 'data: {"late":true}\n\n');
    worker.complete(req.request_id, '', 200, { body: '' });
    await sleep(150);
    expect(worker.count('cancel')).toBe(1);
    expect(worker.closeState).toBeUndefined(); // late frames are dropped, not a protocol error
    clearInterval(keepAlive);
    worker.close();
  });

  it('releases the slot of a cancelled request when the worker reports a lower load', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['slot'] });
    const abort = new AbortController();
    const first = post(gw.url, '/v1/chat/completions', chat('slot'), {}, abort.signal).catch((e) => e);
    await worker.next('request');
    abort.abort();
    await first;
    await worker.next('cancel');
    // Like the public daemon, this worker never completes the cancelled request.
    const second = post(gw.url, '/v1/chat/completions', chat('slot', { second: true }));
    await sleep(100);
    expect(worker.count('request')).toBe(1); // slot still held
    worker.send({ type: 'pong', current_load: 0 });
    const req2 = await worker.next('request');
    worker.complete(req2.request_id, OK_BODY);
    expect((await second).status).toBe(200);
    worker.close();
  });

  it('pulls queued work when a worker registers or updates its models', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['before'] });
    const keepAlive = setInterval(() => worker.send({ type: 'pong', current_load: 0 }), 50);
    // "after" is unknown until a worker serves it: declare it through the admin API first ("*"
    // keeps every other model allowed for local's workers: a provider's models are its allow-list).
    await admin(gw.url, 'PATCH', '/admin/providers/local', TEST_ADMIN_TOKEN, { models: ['after', 'late-join', '*'] });
    const pending = post(gw.url, '/v1/chat/completions', chat('after'));
    await sleep(50);
    expect(worker.count('request')).toBe(0);
    worker.send({ type: 'models_update', models: ['before', 'after'], current_load: 0 });
    const req = await worker.next('request');
    expect(req.model).toBe('after');
    worker.complete(req.request_id, OK_BODY);
    expect((await pending).status).toBe(200);

    const waiting = post(gw.url, '/v1/chat/completions', chat('late-join'));
    await sleep(50);
    const joiner = await ScriptedWorker.register(gw.workerUrl, { models: ['late-join'] });
    const joined = await joiner.worker.next('request');
    joiner.worker.complete(joined.request_id, OK_BODY);
    expect((await waiting).status).toBe(200);
    clearInterval(keepAlive);
    worker.close();
    joiner.worker.close();
  });

  it('drains an idle worker: closed 1000 "graceful shutdown complete" and hidden from /v1/models', async () => {
    const { worker, ack } = await ScriptedWorker.register(gw.workerUrl, { models: ['idle-drain'] });
    const res = await admin(gw.url, 'POST', `/admin/workers/${ack.worker_id}/drain`, TEST_ADMIN_TOKEN, { reason: 'maintenance' });
    expect(res.status).toBe(202);
    expect(await worker.next('graceful_shutdown')).toMatchObject({ reason: 'maintenance' });
    expect(await worker.closed).toEqual({ code: 1000, reason: 'graceful shutdown complete' });
    const models: any = await (await fetch(`${gw.url}/v1/models`)).json();
    expect(models.data.map((m: { id: string }) => m.id)).not.toContain('idle-drain');
  });

  it('drains a busy worker: no new work, in-flight finishes, then it is closed', async () => {
    const { worker, ack } = await ScriptedWorker.register(gw.workerUrl, { models: ['busy-drain'], max_concurrent: 2 });
    const keepAlive = setInterval(() => worker.send({ type: 'pong', current_load: 1 }), 50);
    const inFlight = post(gw.url, '/v1/chat/completions', chat('busy-drain'));
    const req = await worker.next('request');
    await admin(gw.url, 'POST', `/admin/workers/${ack.worker_id}/drain`, TEST_ADMIN_TOKEN, { timeout_secs: 10 });
    await worker.next('graceful_shutdown');
    // Its only worker is draining: no healthy worker, answered at once with a retry hint.
    const refused = await post(gw.url, '/v1/chat/completions', chat('busy-drain'));
    expect(refused.status).toBe(503);
    expect(refused.json.error).toMatchObject({ code: 'no_healthy_worker', retriable: true });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(worker.count('request')).toBe(1);
    worker.complete(req.request_id, OK_BODY);
    expect((await inFlight).status).toBe(200);
    expect(await worker.closed).toEqual({ code: 1000, reason: 'graceful shutdown complete' });
    clearInterval(keepAlive);
    // With the drained worker gone, a request for its (recently served) model waits for a fresh worker.
    const waiting = post(gw.url, '/v1/chat/completions', chat('busy-drain'));
    await sleep(50);
    const fresh = await ScriptedWorker.register(gw.workerUrl, { models: ['busy-drain'] });
    const r2 = await fresh.worker.next('request');
    fresh.worker.complete(r2.request_id, OK_BODY);
    expect((await waiting).status).toBe(200);
    fresh.worker.close();
  });

  it('lists connected workers on the admin API without secrets', async () => {
    const { worker, ack } = await ScriptedWorker.register(gw.workerUrl, { models: ['listed'] });
    const res = await admin(gw.url, 'GET', '/admin/workers', TEST_ADMIN_TOKEN);
    expect(res.json.data).toEqual(expect.arrayContaining([expect.objectContaining({ id: ack.worker_id, models: ['listed'], draining: false })]));
    expect(res.text).not.toContain('test-worker-secret');
    expect((await admin(gw.url, 'GET', '/admin/workers', 'wrong')).status).toBe(401);
    worker.close();
  });
});
