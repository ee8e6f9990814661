import OpenAI from 'openai';
import { TEST_ADMIN_TOKEN, TestGateway } from '../support/gateway';
import { admin, chat, eventually, get, post } from '../support/http';
import { ScriptedWorker } from '../support/scripted-worker';
import { parsePrometheusText } from '../observability/prometheus-text';
import { itWithLogs as it, withGatewayLogs } from './support/gateway-process';
import { describeWithPostgres } from './support/postgres';
import { Replicas, startReplicas } from './support/replicas';

const WAIT = 15_000;

/**
 * Forwarding between replicas (issue 18, "One fleet" and "Any request, any replica"): three gateway
 * replicas (each a real `node dist/main.js` process) on one Redis and one PostgreSQL, scripted
 * workers connected to some of them, clients
 * calling every replica. A request routed to a worker connected elsewhere is forwarded to that
 * worker's replica and its answer comes back byte for byte.
 */
describeWithPostgres('cluster mode: one fleet, any request on any replica', () => {
  let replicas: Replicas;
  const gw: Record<'a' | 'b' | 'c', TestGateway> = {} as never;
  const workers: ScriptedWorker[] = [];

  const modelsOn = async (g: TestGateway): Promise<string[]> => ((await get(g.url, '/v1/models')).json?.data ?? []).map((m: { id: string }) => m.id);
  const listWorkers = async (g: TestGateway): Promise<Array<{ name: string; models: string[]; replica: string }>> =>
    (await admin(g.url, 'GET', '/admin/workers', TEST_ADMIN_TOKEN)).json.data;
  const workerNames = async (g: TestGateway) => (await listWorkers(g)).map((w) => w.name);
  const workerName = async (g: TestGateway, model: string) => (await listWorkers(g)).filter((w) => w.models.includes(model)).at(-1)!.name;

  async function worker(on: 'a' | 'b' | 'c', models: string[], maxConcurrent = 1, name?: string): Promise<ScriptedWorker> {
    const { worker: w } = await ScriptedWorker.register(gw[on].workerUrl, {
      models,
      max_concurrent: maxConcurrent,
      worker_name: name,
      features: ['response_start'],
    });
    workers.push(w);
    // Every replica sees it before the test goes on.
    const named = name ?? (await workerName(gw[on], models[0]));
    for (const g of Object.values(gw)) await eventually(async () => (await workerNames(g)).includes(named), WAIT, `${named} visible on ${g.url}`);
    return w;
  }

  beforeAll(
    () =>
      withGatewayLogs(async () => {
        replicas = await startReplicas('forwarding', ['gw-a', 'gw-b', 'gw-c'], { env: { MAX_QUEUE_LEN: '8' }, boot: 'first-alone' });
        [gw.a, gw.b, gw.c] = replicas.gateways;
      }),
    120_000,
  );

  afterAll(async () => {
    for (const w of workers) w.close();
    await replicas?.close();
  });

  it('every replica lists every worker, with the replica it is connected to, and serves its models', async () => {
    await worker('a', ['fleet-model'], 2, 'fleet-worker');
    for (const g of Object.values(gw)) {
      expect(await modelsOn(g)).toContain('fleet-model');
      const res = await admin(g.url, 'GET', '/admin/workers', TEST_ADMIN_TOKEN);
      const w = (res.json.data as Array<Record<string, unknown>>).find((x) => x.name === 'fleet-worker');
      expect(w).toMatchObject({ replica: 'gw-a', models: ['fleet-model'] });
    }
  });

  it('a whole answer comes back through another replica unchanged: status, headers, body', async () => {
    const w = await worker('a', ['whole-model']);
    const pending = post(gw.c.url, '/v1/chat/completions', chat('whole-model'));
    const req = await w.next('request');
    expect(req).toMatchObject({ model: 'whole-model', endpoint_path: '/v1/chat/completions', is_streaming: false });
    const body = '{"id":"x","choices":[{"message":{"role":"assistant","content":"h\\u00e9llo \u2603"}}]}';
    w.send({
      type: 'response_complete',
      request_id: req.request_id,
      status_code: 201,
      headers: { 'content-type': 'application/json', 'x-backend': 'yes' },
      body,
    });
    const res = await pending;
    expect(res.status).toBe(201);
    expect(res.text).toBe(body);
    expect(res.headers.get('x-backend')).toBe('yes');
  });

  it('metrics stay per replica, labelled with it: a forwarded request is counted once, where its client was', async () => {
    const w = await worker('a', ['metrics-model']);
    const count = async (g: TestGateway, replica: string) => {
      const f = parsePrometheusText((await get(g.url, '/metrics')).text).get('switchboard_requests_total');
      const samples = (f?.samples ?? []).filter((x) => x.labels.model === 'metrics-model');
      for (const x of f?.samples ?? []) expect(x.labels.replica).toBe(replica);
      return samples.reduce((n, x) => n + x.value, 0);
    };
    const pending = post(gw.b.url, '/v1/chat/completions', chat('metrics-model'));
    w.complete((await w.next('request')).request_id, { ok: true });
    expect((await pending).status).toBe(200);
    await eventually(async () => (await count(gw.b, 'gw-b')) === 1, WAIT, 'counted at the replica of the client');
    expect(await count(gw.a, 'gw-a')).toBe(0);
    expect(await count(gw.c, 'gw-c')).toBe(0);
    // Workers connected: each replica counts its own.
    const connected = async (g: TestGateway) =>
      (parsePrometheusText((await get(g.url, '/metrics')).text).get('switchboard_workers_connected')?.samples ?? []).reduce((n, x) => n + x.value, 0);
    expect(await connected(gw.b)).toBe(workers.filter((x) => x.ws.url.startsWith(gw.b.workerUrl)).length);
  });

  it('a stream comes back chunk by chunk, byte for byte, to the official SDK', async () => {
    const w = await worker('b', ['stream-model']);
    const client = new OpenAI({ baseURL: `${gw.a.url}/v1`, apiKey: 'none', maxRetries: 0 });
    const chunks = ['data: {"choices":[{"delta":{"content":"Hel"}}]}\n\n', 'data: {"choices":[{"delta":{"content":"lo ☃"}}]}\n\n', 'data: [DONE]\n\n'];
    const streamed = (async () => {
      const stream = await client.chat.completions.create({ model: 'stream-model', messages: [{ role: 'user', content: 'hi' }], stream: true });
      let text = '';
      for await (const part of stream) text += part.choices[0]?.delta?.content ?? '';
      return text;
    })();
    const req = await w.next('request');
    w.send({ type: 'response_start', request_id: req.request_id, status_code: 200, headers: { 'content-type': 'text/event-stream' } });
    for (const c of chunks) w.chunk(req.request_id, c);
    w.send({ type: 'response_complete', request_id: req.request_id, status_code: 200 });
    expect(await streamed).toBe('Hello ☃');
  });

  it('the raw stream through another replica is the worker’s bytes exactly', async () => {
    const w = await worker('a', ['raw-model']);
    const res = fetch(`${gw.b.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(chat('raw-model', { stream: true })),
    });
    const req = await w.next('request');
    const chunks = ['data: {"a":1}\n\n', ': keep-alive\n\n', 'data: {"b":"\u00e9"}\n\n', 'data: [DONE]\n\n'];
    w.send({ type: 'response_start', request_id: req.request_id, status_code: 200, headers: { 'content-type': 'text/event-stream' } });
    for (const c of chunks) w.chunk(req.request_id, c);
    w.send({ type: 'response_complete', request_id: req.request_id, status_code: 200 });
    const r = await res;
    expect(r.status).toBe(200);
    expect(await r.text()).toBe(chunks.join(''));
  });

  it('a client leaving one replica cancels its request on the worker at another within 100 ms', async () => {
    const w = await worker('a', ['cancel-model']);
    const abort = new AbortController();
    const pending = post(gw.c.url, '/v1/chat/completions', chat('cancel-model'), {}, abort.signal).catch((e: Error) => e);
    const req = await w.next('request');
    // Both instants in this process, on one monotonic clock: the abort (which closes the client's
    // socket to gw-c) and the cancel frame's arrival at the worker (connected to gw-a), both on loopback.
    let cancelledAt: number | undefined;
    w.ws.on('message', (data) => {
      const f = JSON.parse(String(data)) as { type: string; request_id?: string };
      if (f.type === 'cancel' && f.request_id === req.request_id) cancelledAt ??= performance.now();
    });
    const abortedAt = performance.now();
    abort.abort();
    await pending;
    const cancel = await w.next('cancel', (f) => f.request_id === req.request_id);
    expect(cancel.reason).toBe('client_disconnect');
    // Issue 18: "a client leaving replica B cancels its request on the worker at replica A within 100 ms".
    expect(cancelledAt! - abortedAt).toBeLessThan(100);
  });

  it('no worker ever holds more than max_concurrent requests, whichever replicas send them', async () => {
    const w = await worker('b', ['slots-model'], 2);
    let inFlight = 0;
    let most = 0;
    const answered = new Set<string>();
    w.ws.on('message', (data) => {
      const f = JSON.parse(String(data)) as { type: string; request_id: string };
      if (f.type !== 'request') return;
      most = Math.max(most, ++inFlight);
      // Answered a little later, so requests from all three replicas overlap.
      setTimeout(() => {
        inFlight--;
        answered.add(f.request_id);
        w.complete(f.request_id, { ok: f.request_id });
      }, 30);
    });
    const all = await Promise.all(Array.from({ length: 9 }, (_, i) => post([gw.a, gw.b, gw.c][i % 3].url, '/v1/chat/completions', chat('slots-model'))));
    expect(all.map((r) => r.status)).toEqual(all.map(() => 200));
    expect(answered.size).toBe(9);
    expect(most).toBeLessThanOrEqual(2);
    expect(most).toBe(2);
  });

  it('the queue bound holds for the whole cluster; a waiting request is served when a worker anywhere frees a slot', async () => {
    const w = await worker('a', ['queued-model']);
    const first = post(gw.a.url, '/v1/chat/completions', chat('queued-model'));
    const busy = await w.next('request');
    // Eight wait, at the two other replicas: the pool's bound (MAX_QUEUE_LEN=8) is reached cluster-wide.
    const waiting = Array.from({ length: 8 }, (_, i) => post([gw.b, gw.c][i % 2].url, '/v1/chat/completions', chat('queued-model')));
    // Replicas publish their queue depths within 20 ms; give them ample time (not a timing assertion).
    await new Promise((r) => setTimeout(r, 300));
    const refused = await post(gw.a.url, '/v1/chat/completions', chat('queued-model'));
    expect(refused.status).toBe(429);
    expect(refused.json.error.code).toBe('queue_full');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    w.complete(busy.request_id, { n: 1 });
    for (let n = 2; n <= 9; n++) w.complete((await w.next('request')).request_id, { n });
    const answers = await Promise.all([first, ...waiting]);
    expect(answers.map((r) => r.status)).toEqual(answers.map(() => 200));
    expect(answers.map((r) => r.json.n).sort((x, y) => x - y)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  it('a freed slot goes to the request that waited longest in the cluster, not to a younger one at the worker’s replica', async () => {
    const w = await worker('a', ['order-model']);
    const first = post(gw.a.url, '/v1/chat/completions', chat('order-model', { messages: [{ role: 'user', content: 'first' }] }));
    const busy = await w.next('request');
    const older = post(gw.b.url, '/v1/chat/completions', chat('order-model', { messages: [{ role: 'user', content: 'older-at-b' }] }));
    // B publishes what waits there; then a younger request arrives at A itself (well past the 50 ms slack).
    await new Promise((r) => setTimeout(r, 300));
    const younger = post(gw.a.url, '/v1/chat/completions', chat('order-model', { messages: [{ role: 'user', content: 'younger-at-a' }] }));
    await new Promise((r) => setTimeout(r, 100));
    w.complete(busy.request_id, { n: 'first' });
    const next = await w.next('request');
    expect(JSON.parse(next.body as string).messages[0].content).toBe('older-at-b');
    w.complete(next.request_id, { n: 'older' });
    const last = await w.next('request');
    expect(JSON.parse(last.body as string).messages[0].content).toBe('younger-at-a');
    w.complete(last.request_id, { n: 'younger' });
    expect((await Promise.all([first, older, younger])).map((r) => r.json.n)).toEqual(['first', 'older', 'younger']);
  });

  it('a worker lost before answering: the request is served by a worker at another replica', async () => {
    const first = await worker('a', ['lost-model'], 1, 'lost-1');
    const pending = post(gw.c.url, '/v1/chat/completions', chat('lost-model'));
    const req = await first.next('request');
    const second = await worker('b', ['lost-model'], 1, 'lost-2');
    first.kill();
    const again = await second.next('request');
    expect(again.request_id).toBe(req.request_id);
    second.complete(again.request_id, { served: 'second' });
    const res = await pending;
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ served: 'second' });
  });

  it('a worker lost mid-stream: the stream ends with the dialect’s error event, never a clean end', async () => {
    const w = await worker('a', ['midstream-model']);
    const res = fetch(`${gw.c.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(chat('midstream-model', { stream: true })),
    });
    const req = await w.next('request');
    w.send({ type: 'response_start', request_id: req.request_id, status_code: 200, headers: { 'content-type': 'text/event-stream' } });
    w.chunk(req.request_id, 'data: {"part":1}\n\n');
    const r = await res;
    const reader = r.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first).toContain('"part":1');
    w.kill();
    let rest = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      rest += new TextDecoder().decode(value);
    }
    expect(rest).toContain('"error"');
    expect(rest).not.toContain('[DONE]');
  });
});
