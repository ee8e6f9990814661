import OpenAI from 'openai';
import { startGateway, TestGateway } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { chat, post, sleep } from '../support/http';
import { OK_BODY, workerView, writeConfig } from '../support/routing';

// Split from health.e2e-spec.ts (worker health): what the gateway does when a worker answers backend_unavailable.

describe('backend_unavailable: requeue to another worker', () => {
  let gw: TestGateway;
  let openai: OpenAI;
  beforeAll(async () => {
    gw = await startGateway({
      CONFIG_FILE: writeConfig(`
providers:
  - name: local
    secret: test-worker-secret
routing:
  max_retries: 1
`),
    });
    openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'k', maxRetries: 0 });
  });
  afterAll(() => gw.close());

  it('a backend_unavailable error before any chunk sends the request to another worker; the client sees only the answer', async () => {
    const workers = [
      await ScriptedWorker.register(gw.workerUrl, { models: ['bu-model'] }),
      await ScriptedWorker.register(gw.workerUrl, { models: ['bu-model'] }),
    ];
    const raw = '{"model":"bu-model","messages":[{"role":"user","content":"hi"}]}';
    const pending = post(gw.url, '/v1/chat/completions', raw);
    const first = await ScriptedWorker.firstOf(
      workers.map((w) => w.worker),
      'request',
    );
    first.worker.send({ type: 'error', request_id: first.frame.request_id, code: 'backend_unavailable', message: 'connect ECONNREFUSED' });
    const other = workers.find((w) => w.worker !== first.worker)!;
    const second = await other.worker.next('request');
    expect(second.body).toBe(raw);
    other.worker.complete(second.request_id, OK_BODY);
    const res = await pending;
    expect(res.status).toBe(200);
    expect(res.json).toEqual(OK_BODY);
    expect(first.worker.count('request')).toBe(1);
    const failedView = await workerView(gw, workers.find((w) => w.worker === first.worker)!.ack.worker_id);
    expect(failedView.consecutive_failures).toBe(1);
    for (const w of workers) w.worker.close();
  });

  it('the worker that answered backend_unavailable is avoided for that request even when it is the only free one', async () => {
    const a = await ScriptedWorker.register(gw.workerUrl, { models: ['bu-avoid', 'bu-avoid-a'], max_concurrent: 1 });
    const b = await ScriptedWorker.register(gw.workerUrl, { models: ['bu-avoid', 'bu-avoid-b'], max_concurrent: 1 });
    const heldB = post(gw.url, '/v1/chat/completions', chat('bu-avoid-b'));
    const hb = await b.worker.next('request');
    const pending = post(gw.url, '/v1/chat/completions', chat('bu-avoid', { marker: 1 }));
    const ra = await a.worker.next('request');
    a.worker.send({ type: 'error', request_id: ra.request_id, code: 'backend_unavailable', message: 'down' });
    await sleep(150);
    expect(a.worker.count('request')).toBe(1); // A is free, but not for this request
    b.worker.complete(hb.request_id, OK_BODY);
    const rb = await b.worker.next('request');
    expect(JSON.parse(rb.body).marker).toBe(1);
    b.worker.complete(rb.request_id, OK_BODY);
    expect((await pending).status).toBe(200);
    expect((await heldB).status).toBe(200);
    // Other requests may still use A.
    const other = post(gw.url, '/v1/chat/completions', chat('bu-avoid-a'));
    const ro = await a.worker.next('request');
    a.worker.complete(ro.request_id, OK_BODY);
    expect((await other).status).toBe(200);
    a.worker.close();
    b.worker.close();
  });

  it('backend_unavailable requeues count toward the requeue limit (routing.max_retries: 1)', async () => {
    const workers = [];
    for (let i = 0; i < 3; i++) workers.push((await ScriptedWorker.register(gw.workerUrl, { models: ['bu-limit'] })).worker);
    const pending = openai.chat.completions.create({ model: 'bu-limit', messages: [{ role: 'user', content: 'hi' }] }).catch((e) => e);
    const tried = new Set<ScriptedWorker>();
    for (let attempt = 0; attempt < 2; attempt++) {
      const got = await ScriptedWorker.firstOf(
        workers.filter((w) => !tried.has(w)),
        'request',
      );
      tried.add(got.worker);
      got.worker.send({ type: 'error', request_id: got.frame.request_id, code: 'backend_unavailable', message: 'down' });
    }
    const err = await pending;
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(err.status).toBe(503);
    expect(err.error).toMatchObject({ code: 'requeue_exhausted', retriable: true });
    expect(workers.map((w) => w.count('request')).reduce((a, b) => a + b, 0)).toBe(2);
    for (const w of workers) w.close();
  });

  it('another error code answers 502 worker_error without trying another worker', async () => {
    const workers = [
      await ScriptedWorker.register(gw.workerUrl, { models: ['bu-other'] }),
      await ScriptedWorker.register(gw.workerUrl, { models: ['bu-other'] }),
    ];
    const pending = openai.chat.completions.create({ model: 'bu-other', messages: [{ role: 'user', content: 'hi' }] }).catch((e) => e);
    const first = await ScriptedWorker.firstOf(
      workers.map((w) => w.worker),
      'request',
    );
    first.worker.send({ type: 'error', request_id: first.frame.request_id, code: 'backend_response_failed', message: 'reset' });
    const err = await pending;
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(err.status).toBe(502);
    expect(err.error).toMatchObject({ code: 'worker_error', retriable: true });
    await sleep(50);
    expect(workers.map((w) => w.worker.count('request')).reduce((a, b) => a + b, 0)).toBe(1);
    for (const w of workers) w.worker.close();
  });

  it('backend_unavailable after a chunk (non-streaming request) is not requeued: 502 worker_error', async () => {
    const workers = [
      await ScriptedWorker.register(gw.workerUrl, { models: ['bu-late'] }),
      await ScriptedWorker.register(gw.workerUrl, { models: ['bu-late'] }),
    ];
    const pending = post(gw.url, '/v1/chat/completions', chat('bu-late'));
    const first = await ScriptedWorker.firstOf(
      workers.map((w) => w.worker),
      'request',
    );
    first.worker.chunk(first.frame.request_id, '{"id":"partial"');
    first.worker.send({ type: 'error', request_id: first.frame.request_id, code: 'backend_unavailable', message: 'lost it' });
    const other = workers.find((w) => w.worker !== first.worker)!.worker;
    const raced = await Promise.race([
      pending.then(() => 'answered' as const),
      other
        .next('request', () => true, 2000)
        .then(() => 'requeued' as const)
        .catch(() => 'none' as const),
    ]);
    if (raced === 'requeued') other.complete(other.frames.find((f) => f.type === 'request')!.request_id, OK_BODY);
    const res = await pending;
    expect(other.count('request')).toBe(0);
    expect(res.status).toBe(502);
    expect(res.json.error.code).toBe('worker_error');
    for (const w of workers) w.worker.close();
  });

  it('backend_unavailable after the stream started ends the stream with an error event, not a requeue', async () => {
    const workers = [
      await ScriptedWorker.register(gw.workerUrl, { models: ['bu-stream'] }),
      await ScriptedWorker.register(gw.workerUrl, { models: ['bu-stream'] }),
    ];
    const pending = post(gw.url, '/v1/chat/completions', chat('bu-stream', { stream: true }));
    const first = await ScriptedWorker.firstOf(
      workers.map((w) => w.worker),
      'request',
    );
    first.worker.chunk(first.frame.request_id, 'data: {"choices":[]}\n\n');
    first.worker.send({ type: 'error', request_id: first.frame.request_id, code: 'backend_unavailable', message: 'lost it' });
    const res = await pending;
    expect(res.status).toBe(200);
    expect(res.text).toContain('event: error');
    expect(res.text).toContain('worker_error');
    const other = workers.find((w) => w.worker !== first.worker)!.worker;
    expect(other.count('request')).toBe(0);
    for (const w of workers) w.worker.close();
  });
});
