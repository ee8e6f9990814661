/**
 * Contract: the task API (control/data-plane spec §2, §3, §9–§11). `POST /v1/tasks` answers 202
 * with `{task_id, queue_position, predicted_start_ms, stream_url, status_url}` after admission
 * checks; `GET /v1/tasks/:id/stream` emits `started → token* → end` (metrics interleaved) or ends
 * with one `error`; every event has an `id:` and `Last-Event-ID` resumes after it; cancel is
 * race-free and idempotent; the worker sees an ordinary streaming OpenAI request and `cancel`.
 */
import { Admin } from './support/admin';
import { exchange, HttpExchange, httpCall, HttpResult, postJson } from './support/http';
import { useScope } from './support/scope';
import { parseSse, SseEvent } from './support/sse';
import { Frame, ScriptedWorker } from './support/worker';
import { uid, uniqueModel, waitUntil } from './support/util';

interface TaskEvent extends SseEvent {
  id?: string;
  json: any;
}

/** SSE events with their `id:` lines and parsed JSON data. */
function taskEvents(text: string): TaskEvent[] {
  return parseSse(text).map((e) => {
    const idLine = e.raw.split('\n').find((l) => l.startsWith('id:'));
    return { ...e, id: idLine?.slice(3).trim(), json: e.data ? JSON.parse(e.data) : undefined };
  });
}

function chatDelta(text: string): string {
  return `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: text } }] })}\n\n`;
}

const DONE = 'data: {"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n';

/** Tasks this file submitted: cancelled after each test, so none waits on in the shared gateway's queues. */
const submitted = new Set<string>();

async function submit(body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<HttpResult> {
  const res = await postJson('/v1/tasks', JSON.stringify(body), headers).done;
  if (res.status === 202) submitted.add(res.json().task_id);
  return res;
}

afterEach(async () => {
  for (const id of submitted) await httpCall(`/v1/tasks/${encodeURIComponent(id)}/cancel`, { method: 'POST' }).catch(() => undefined);
  submitted.clear();
});

afterAll(async () => {
  // Cancelled tasks leave the queues at once: the suites that share this gateway start from empty queues.
  const admin = new Admin();
  for (const p of await admin.providers()) expect([p.name, p.queue_depth]).toEqual([p.name, 0]);
});

function openStream(taskId: string, headers: Record<string, string> = {}): HttpExchange {
  return exchange(`/v1/tasks/${encodeURIComponent(taskId)}/stream`, { headers: { accept: 'text/event-stream', ...headers } });
}

function eventsOf(x: HttpExchange): TaskEvent[] {
  return taskEvents(x.receivedText());
}

async function untilEvent(x: HttpExchange, pred: (e: TaskEvent) => boolean): Promise<TaskEvent> {
  await x.waitForText(() => eventsOf(x).some(pred));
  return eventsOf(x).find(pred)!;
}

function cancel(taskId: string): Promise<HttpResult> {
  return httpCall(`/v1/tasks/${encodeURIComponent(taskId)}/cancel`, { method: 'POST' });
}

describe('task API', () => {
  const scope = useScope();

  async function streamingWorker(model: string, extra: Record<string, unknown> = {}, max = 4): Promise<ScriptedWorker> {
    return scope.worker({ models: [model], max_concurrent: max, extra });
  }

  test('submit → stream → end: started first, tokens with consecutive indices, end with tokens_out; the worker got a streaming chat request without gateway fields', async () => {
    const model = uniqueModel('task');
    const w = await streamingWorker(model);
    const res = await submit({
      model,
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 32,
      temperature: 0.2,
      session_id: `s-${uid()}`,
      output_mode: 'text',
    });
    expect(res.status).toBe(202);
    const accepted = res.json();
    expect(accepted).toMatchObject({ task_id: expect.any(String), queue_position: expect.any(Number), predicted_start_ms: expect.any(Number) });
    expect(typeof accepted.stream_url).toBe('string');
    expect(typeof accepted.status_url).toBe('string');

    const req = await w.nextRequest();
    expect(req.endpoint_path).toBe('/v1/chat/completions');
    expect(req.is_streaming).toBe(true);
    const forwarded = JSON.parse(req.body);
    expect(forwarded).toMatchObject({ model, stream: true, max_tokens: 32, temperature: 0.2, messages: [{ role: 'user', content: 'hi' }] });
    for (const gatewayField of ['task_id', 'session_id', 'output_mode', 'pool_id', 'budget']) expect(forwarded).not.toHaveProperty(gatewayField);

    const x = openStream(accepted.task_id);
    await untilEvent(x, (e) => e.event === 'started');
    for (const piece of ['Hel', 'lo', ' world']) w.chunk(req.request_id, chatDelta(piece));
    w.chunk(req.request_id, DONE);
    w.complete(req.request_id, { token_counts: { prompt_tokens: 3, completion_tokens: 3, total_tokens: 6 } });
    const done = await x.done;
    expect(done.status).toBe(200);
    expect(String(done.headers['content-type'])).toMatch(/^text\/event-stream/);
    const events = taskEvents(done.text).filter((e) => e.event !== 'metrics');
    expect(events[0].event).toBe('started');
    expect(events[0].json).toMatchObject({ queue_position: expect.any(Number), predicted_start_ms: expect.any(Number) });
    const tokens = events.filter((e) => e.event === 'token');
    expect(tokens.map((t) => t.json.t).join('')).toBe('Hello world');
    expect(tokens.map((t) => t.json.i)).toEqual([0, 1, 2]);
    const end = events[events.length - 1];
    expect(end.event).toBe('end');
    expect(end.json).toMatchObject({ tokens_out: expect.any(Number), decode_time_ms: expect.any(Number) });
    // Every event carries an id, and ids are unique.
    const ids = taskEvents(done.text).map((e) => e.id);
    expect(ids.every((id) => typeof id === 'string' && id.length > 0)).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);

    const status = (await httpCall(`/v1/tasks/${accepted.task_id}`)).json();
    expect(status).toMatchObject({ status: 'completed' });
  });

  test('a prompt task is sent to /v1/completions and its `text` deltas become tokens', async () => {
    const model = uniqueModel('task-prompt');
    const w = await streamingWorker(model);
    const accepted = (await submit({ model, prompt: 'Once upon', max_tokens: 8 })).json();
    const req = await w.nextRequest();
    expect(req.endpoint_path).toBe('/v1/completions');
    expect(JSON.parse(req.body)).toMatchObject({ prompt: 'Once upon', stream: true });
    const x = openStream(accepted.task_id);
    w.chunk(req.request_id, `data: ${JSON.stringify({ choices: [{ index: 0, text: ' a time' }] })}\n\ndata: [DONE]\n\n`);
    w.complete(req.request_id);
    const tokens = taskEvents((await x.done).text).filter((e) => e.event === 'token');
    expect(tokens.map((t) => t.json)).toEqual([{ t: ' a time', i: 0 }]);
  });

  test('while queued, started reports the position; it is sent again with a new position as the queue moves', async () => {
    const model = uniqueModel('task-queue');
    const w = await streamingWorker(model, {}, 1);
    const first = (await submit({ model, prompt: 'a', max_tokens: 4 })).json();
    const r1 = await w.nextRequest();
    const second = (await submit({ model, prompt: 'b', max_tokens: 4 })).json();
    const third = (await submit({ model, prompt: 'c', max_tokens: 4 })).json();
    expect(second.queue_position).toBeGreaterThanOrEqual(1);
    expect(third.queue_position).toBeGreaterThan(second.queue_position);
    const x = openStream(third.task_id);
    const started = await untilEvent(x, (e) => e.event === 'started');
    expect(started.json.queue_position).toBe(third.queue_position);
    w.complete(r1.request_id);
    const r2 = await w.nextRequest();
    // The third task moved up by one: a new `started` says so.
    await untilEvent(x, (e) => e.event === 'started' && e.json.queue_position < third.queue_position);
    w.complete(r2.request_id);
    const r3 = await w.nextRequest();
    w.chunk(r3.request_id, chatDelta('x'));
    w.complete(r3.request_id);
    const events = taskEvents((await x.done).text).filter((e) => e.event !== 'metrics');
    expect(events.filter((e) => e.event === 'started').length).toBeGreaterThanOrEqual(2);
    expect(events[events.length - 1].event).toBe('end');
    void first;
  });

  test('cancel while streaming: once answered, no token follows on any stream, the worker gets cancel; a second cancel is idempotent', async () => {
    const model = uniqueModel('task-cancel');
    const w = await streamingWorker(model);
    const { task_id } = (await submit({ model, messages: [{ role: 'user', content: 'go' }], max_tokens: 64 })).json();
    const req = await w.nextRequest();
    const a = openStream(task_id);
    const b = openStream(task_id);
    w.chunk(req.request_id, chatDelta('one'));
    await untilEvent(a, (e) => e.event === 'token');
    await untilEvent(b, (e) => e.event === 'token');
    const answered = await cancel(task_id);
    expect(answered.status).toBe(200);
    expect(answered.json()).toMatchObject({ status: 'cancelled' });
    const tokensAtCancel = eventsOf(a).filter((e) => e.event === 'token').length;
    // The worker keeps talking after the cancel: none of it may reach a reader.
    w.chunk(req.request_id, chatDelta('two'));
    w.chunk(req.request_id, chatDelta('three'));
    const cancelFrame = await w.next('cancel', (f: Frame) => f.request_id === req.request_id);
    expect(cancelFrame.request_id).toBe(req.request_id);
    for (const x of [a, b]) {
      const text = (await x.done).text;
      const events = taskEvents(text);
      expect(events.filter((e) => e.event === 'token')).toHaveLength(tokensAtCancel);
      expect(text).not.toContain('two');
    }
    const again = await cancel(task_id);
    expect(again.status).toBe(200);
    expect(again.json()).toMatchObject({ status: 'cancelled' });
    expect((await httpCall(`/v1/tasks/${task_id}`)).json()).toMatchObject({ status: 'cancelled' });
  });

  test('cancel while queued never reaches a worker; cancel after completion answers 200 with the final status', async () => {
    const model = uniqueModel('task-cancel-q');
    const w = await streamingWorker(model, {}, 1);
    const busy = (await submit({ model, prompt: 'a', max_tokens: 4 })).json();
    const r1 = await w.nextRequest();
    const queued = (await submit({ model, prompt: 'b', max_tokens: 4 })).json();
    expect((await cancel(queued.task_id)).json()).toMatchObject({ status: 'cancelled' });
    w.chunk(r1.request_id, chatDelta('done'));
    w.complete(r1.request_id);
    await waitUntil(async () => (await httpCall(`/v1/tasks/${busy.task_id}`)).json().status === 'completed', 'the first task to complete');
    const late = await cancel(busy.task_id);
    expect(late.status).toBe(200);
    expect(late.json()).toMatchObject({ status: 'completed' });
    // The cancelled task never ran: the worker saw exactly one request.
    await new Promise((r) => setTimeout(r, 200));
    expect(w.requests()).toHaveLength(1);
  });

  test('Last-Event-ID resumes after that event', async () => {
    const model = uniqueModel('task-resume');
    const w = await streamingWorker(model);
    const { task_id } = (await submit({ model, messages: [{ role: 'user', content: 'r' }], max_tokens: 8 })).json();
    const req = await w.nextRequest();
    for (const piece of ['a', 'b', 'c', 'd']) w.chunk(req.request_id, chatDelta(piece));
    w.complete(req.request_id);
    const full = taskEvents((await openStream(task_id).done).text);
    const secondToken = full.filter((e) => e.event === 'token')[1];
    const resumed = taskEvents((await openStream(task_id, { 'last-event-id': secondToken.id! }).done).text);
    const after = full.slice(full.indexOf(secondToken) + 1);
    expect(resumed.map((e) => e.id)).toEqual(after.map((e) => e.id));
    expect(resumed.filter((e) => e.event === 'token').map((e) => e.json.t)).toEqual(['c', 'd']);
  });

  test('bad input: unknown task 404, a task id that exists 409, malformed bodies 400 naming the field, unknown model refused before enqueue', async () => {
    const model = uniqueModel('task-bad');
    const w = await streamingWorker(model);
    expect((await httpCall(`/v1/tasks/nope-${uid()}`)).status).toBe(404);
    expect((await httpCall(`/v1/tasks/nope-${uid()}/stream`)).status).toBe(404);
    expect((await cancel(`nope-${uid()}`)).status).toBe(404);
    const taskId = `mine-${uid()}`;
    expect((await submit({ task_id: taskId, model, prompt: 'x', max_tokens: 4 })).status).toBe(202);
    const dup = await submit({ task_id: taskId, model, prompt: 'x', max_tokens: 4 });
    expect(dup.status).toBe(409);
    const noTokens = await submit({ model, prompt: 'x', max_tokens: 'many' });
    expect(noTokens.status).toBe(400);
    expect(noTokens.json().error).toMatchObject({ kind: 'INVALID_PARAMS', param: 'max_tokens' });
    const noPrompt = await submit({ model, max_tokens: 4 });
    expect(noPrompt.status).toBe(400);
    expect(noPrompt.json().error.kind).toBe('INVALID_PARAMS');
    const notJson = await postJson('/v1/tasks', '{"model":').done;
    expect(notJson.status).toBe(400);
    const unknown = await submit({ model: uniqueModel('nobody'), prompt: 'x', max_tokens: 4 });
    expect(unknown.status).toBe(400);
    expect(unknown.json().error).toMatchObject({ kind: 'ADMISSION_REJECT', check: 'model' });
    void w;
  });

  test('admission: a prompt plus max_tokens beyond every eligible worker context is refused with ADMISSION_REJECT before enqueue', async () => {
    const model = uniqueModel('task-ctx');
    const w = await streamingWorker(model, { capabilities: { [model]: { context_length: 256 } } });
    const refused = await submit({ model, prompt: 'x', max_tokens: 1000 });
    expect(refused.status).toBe(400);
    expect(refused.json().error).toMatchObject({ kind: 'ADMISSION_REJECT' });
    const explicit = await submit({ model, prompt: 'x', max_tokens: 100, ctx: 50 });
    expect(explicit.status).toBe(400);
    expect(explicit.json().error.kind).toBe('ADMISSION_REJECT');
    expect((await submit({ model, prompt: 'x', max_tokens: 100 })).status).toBe(202);
    await w.nextRequest();
    // The refused tasks were never queued: only the admitted one reached the worker.
    expect(w.requests()).toHaveLength(1);
  });

  test('pool_id pins without fallback: an unknown pool is INVALID_PARAMS, a known pool places the task there', async () => {
    const model = uniqueModel('task-pin');
    const unknown = await submit({ model, prompt: 'x', max_tokens: 4, pool_id: `no-such-pool-${uid()}` });
    expect(unknown.status).toBe(400);
    expect(unknown.json().error).toMatchObject({ kind: 'INVALID_PARAMS' });
    const pool = await scope.provider({}, 'taskpin');
    const elsewhere = await streamingWorker(model);
    const pinned = await scope.worker({ models: [model], max_concurrent: 4 }, { provider: pool.name, secret: pool.secret });
    const { task_id } = (await submit({ model, prompt: 'x', max_tokens: 4, pool_id: pool.name })).json();
    const req = await pinned.nextRequest();
    pinned.complete(req.request_id);
    await waitUntil(async () => (await httpCall(`/v1/tasks/${task_id}`)).json().status === 'completed', 'the pinned task to complete');
    expect(elsewhere.requests()).toHaveLength(0);
  });

  test('queue full: 429 with Retry-After, X-Backoff-Ms and policy_label, retriable, retry_after_ms in the body', async () => {
    const pool = await scope.provider({ max_queue_len: 1 }, 'taskfull');
    const model = uniqueModel('task-full');
    const w = await scope.worker({ models: [model], max_concurrent: 1 }, { provider: pool.name, secret: pool.secret });
    expect((await submit({ model, prompt: 'a', max_tokens: 4 })).status).toBe(202);
    await w.nextRequest();
    expect((await submit({ model, prompt: 'b', max_tokens: 4 })).status).toBe(202);
    const full = await submit({ model, prompt: 'c', max_tokens: 4 });
    expect(full.status).toBe(429);
    expect(full.headers['retry-after']).toMatch(/^\d+$/);
    expect(full.headers['x-backoff-ms']).toMatch(/^\d+$/);
    expect(full.json().error).toMatchObject({ policy_label: expect.any(String), retriable: true, retry_after_ms: expect.any(Number) });
  });

  test('a worker lost before the first token requeues the task; after the first token the stream ends with one error event', async () => {
    const model = uniqueModel('task-loss');
    const doomed = await streamingWorker(model);
    const { task_id } = (await submit({ model, messages: [{ role: 'user', content: 'x' }], max_tokens: 8 })).json();
    await doomed.nextRequest();
    const rescuer = await streamingWorker(model);
    doomed.terminate();
    const req = await rescuer.nextRequest();
    rescuer.chunk(req.request_id, chatDelta('saved'));
    rescuer.complete(req.request_id);
    const saved = taskEvents((await openStream(task_id).done).text);
    expect(saved.filter((e) => e.event === 'token').map((e) => e.json.t)).toEqual(['saved']);
    expect(saved[saved.length - 1].event).toBe('end');

    const second = (await submit({ model, messages: [{ role: 'user', content: 'y' }], max_tokens: 8 })).json();
    const r2 = await rescuer.nextRequest();
    rescuer.chunk(r2.request_id, chatDelta('half'));
    const x = openStream(second.task_id);
    await untilEvent(x, (e) => e.event === 'token');
    rescuer.terminate();
    const events = taskEvents((await x.done).text);
    const last = events[events.length - 1];
    expect(last.event).toBe('error');
    expect(last.json).toMatchObject({ code: expect.any(String), retriable: expect.any(Boolean) });
    expect(events.filter((e) => e.event === 'error')).toHaveLength(1);
    expect((await httpCall(`/v1/tasks/${second.task_id}`)).json().status).toBe('failed');
  });

  test('every task leaves an artifact, also on failure, listed by session', async () => {
    const model = uniqueModel('task-art');
    const session = `sess-${uid()}`;
    const w = await streamingWorker(model);
    const ok = (await submit({ model, prompt: 'secret prompt text', max_tokens: 8, session_id: session })).json();
    const r1 = await w.nextRequest();
    w.chunk(r1.request_id, chatDelta('fine'));
    w.complete(r1.request_id);
    const bad = (await submit({ model, prompt: 'another secret', max_tokens: 8, session_id: session })).json();
    const r2 = await w.nextRequest();
    w.error(r2.request_id, 'internal', 'backend exploded');
    await waitUntil(async () => (await httpCall(`/v1/tasks/${bad.task_id}`)).json().status === 'failed', 'the failing task to fail');
    const listed = await waitUntil(async () => {
      const res = await httpCall(`/v1/artifacts?session_id=${encodeURIComponent(session)}`);
      const body = res.json();
      const items: any[] = body.data ?? body.artifacts ?? body.items ?? [];
      return items.length >= 2 ? items : undefined;
    }, 'two artifacts for the session');
    expect(listed).toHaveLength(2);
    for (const item of listed) {
      const full = await httpCall(`/v1/artifacts/${encodeURIComponent(item.id)}`);
      expect(full.status).toBe(200);
      expect(full.text).not.toContain('secret prompt text');
      expect(full.text).not.toContain('another secret');
      expect(full.text).toContain(session);
    }
    const texts = await Promise.all(listed.map(async (i) => (await httpCall(`/v1/artifacts/${encodeURIComponent(i.id)}`)).text));
    expect(texts.some((t) => t.includes(ok.task_id))).toBe(true);
    expect(texts.some((t) => t.includes(bad.task_id) && t.includes('worker_error'))).toBe(true);
  });

  test('client artifacts: stored with a content-addressed id, read back with tags and lineage, bounded in size', async () => {
    const tag = `tag-${uid()}`;
    const parentRes = await postJson('/v1/artifacts', JSON.stringify({ kind: 'plan', content: { steps: ['a', 'b'] }, tags: [tag] })).done;
    expect([200, 201]).toContain(parentRes.status);
    const parent = parentRes.json();
    expect(parent.id).toMatch(/^[0-9a-f]{64}$/);
    const again = (await postJson('/v1/artifacts', JSON.stringify({ kind: 'plan', content: { steps: ['a', 'b'] }, tags: [tag] })).done).json();
    expect(again.id).toBe(parent.id);
    const child = (
      await postJson('/v1/artifacts', JSON.stringify({ kind: 'summary', content: { text: 'done' }, tags: [tag], parents: [parent.id] })).done
    ).json();
    const read = (await httpCall(`/v1/artifacts/${child.id}`)).json();
    expect(JSON.stringify(read)).toContain(parent.id);
    expect(JSON.stringify(read)).toContain(tag);
    const byTag = (await httpCall(`/v1/artifacts?tag=${tag}`)).json();
    const items: any[] = byTag.data ?? byTag.artifacts ?? byTag.items ?? [];
    expect(items.map((i) => i.id).sort()).toEqual([parent.id, child.id].sort());
    expect((await httpCall(`/v1/artifacts/${'0'.repeat(64)}`)).status).toBe(404);
    const huge = await postJson('/v1/artifacts', JSON.stringify({ kind: 'trace', content: { blob: 'x'.repeat(1024 * 1024 + 10) } })).done;
    expect(huge.status).toBe(413);
  });
});
