import { startGateway, TestGateway } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { cancel, chatDelta, chatTask, finish, getJson, readStream, submit, TaskEvent, TaskStream } from './support';

/** `text` cut at the given offsets (inside lines, JSON and `\r\n` pairs alike). */
function pieces(text: string, cuts: number[]): string[] {
  const out: string[] = [];
  let from = 0;
  for (const c of [...cuts, text.length]) {
    out.push(text.slice(from, c));
    from = c;
  }
  return out.filter(Boolean);
}

const tokens = (events: TaskEvent[]) => events.filter((e) => e.event === 'token').map((e) => e.data);

describe('task API: submit, stream, status, cancel', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway();
  });
  afterAll(() => gw.close());

  it('runs a chat task as a streaming chat completion and turns its deltas into indexed token events', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['t-chat'] });
    const accepted = await submit(
      gw,
      chatTask('t-chat', {
        task_id: 'first',
        session_id: 's-1',
        ctx: 4096,
        pool_id: 'local',
        priority: 'high',
        output_mode: 'json',
        budget: { tokens: 1000 },
        temperature: 0.3,
        top_p: 0.9,
        stream: false,
      }),
    );
    expect(accepted.status).toBe(202);
    expect(accepted.json).toEqual({
      task_id: 'first',
      queue_position: 0,
      predicted_start_ms: 0,
      stream_url: '/v1/tasks/first/stream',
      status_url: '/v1/tasks/first',
    });
    expect(accepted.headers.get('location')).toBe('/v1/tasks/first');
    expect(accepted.headers.get('x-budget-remaining-tokens')).toBe('1000');

    const req = await worker.next('request');
    expect(req).toMatchObject({ endpoint_path: '/v1/chat/completions', is_streaming: true, model: 't-chat' });
    // Sampling parameters go through; the gateway's own fields do not.
    expect(JSON.parse(req.body)).toEqual({
      model: 't-chat',
      messages: [{ role: 'user', content: 'hello' }],
      max_tokens: 16,
      temperature: 0.3,
      top_p: 0.9,
      stream: true,
    });
    expect(req.headers['content-type']).toBe('application/json');

    const stream = new TaskStream(gw, 'first');
    await stream.until((e) => e.some((x) => x.event === 'started'));
    expect(stream.status).toBe(200);
    expect(stream.headers?.get('content-type')).toMatch(/^text\/event-stream/);
    // Lines split anywhere across chunks (CRLF too), a role-only delta, an empty delta, a usage chunk.
    const text =
      chatDelta(undefined) +
      chatDelta('Hel') +
      chatDelta('') +
      chatDelta('lo').replace(/\n/g, '\r\n') +
      chatDelta(', wör') +
      chatDelta('ld') +
      `data: ${JSON.stringify({ id: 'c', choices: [], usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 } })}\n\n`;
    const crlf = text.indexOf('\r\n');
    for (const piece of pieces(text, [5, 61, 62, 130, crlf + 1, crlf + 30, text.length - 20])) worker.chunk(req.request_id, piece);
    finish(worker, req.request_id);
    await stream.done;

    const events = stream.events;
    expect(events.map((e) => e.id)).toEqual(events.map((_, i) => i + 1));
    expect(events[0]).toEqual({ id: 1, event: 'started', data: { queue_position: 0, predicted_start_ms: 0 } });
    expect(tokens(events)).toEqual([
      { t: 'Hel', i: 0 },
      { t: 'lo', i: 1 },
      { t: ', wör', i: 2 },
      { t: 'ld', i: 3 },
    ]);
    const end = events[events.length - 1];
    expect(end.event).toBe('end');
    expect(end.data).toEqual({ tokens_out: 4, decode_time_ms: expect.any(Number), decode_ms: end.data.decode_time_ms });
    // started → token* → end, metrics anywhere.
    const order = events.map((e) => e.event).filter((e) => e !== 'metrics');
    expect(order).toEqual(['started', 'token', 'token', 'token', 'token', 'end']);

    const status = await getJson(gw, '/v1/tasks/first');
    expect(status.json).toMatchObject({
      task_id: 'first',
      status: 'completed',
      model: 't-chat',
      served_model: 't-chat',
      pool_id: 'local',
      session_id: 's-1',
      tokens_out: 4,
      queue_position: 0,
      error: null,
      last_event_id: end.id,
    });
    expect(status.json.ended_at).toEqual(expect.any(String));
    worker.close();
  });

  it('runs a prompt task as a streaming completion (choices[0].text)', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['t-prompt'] });
    const accepted = await submit(gw, { model: 't-prompt', prompt: 'The capital of France is', max_tokens: 4 });
    expect(accepted.status).toBe(202);
    expect(accepted.json.task_id).toMatch(/^t-[0-9a-f-]{36}$/);
    const req = await worker.next('request');
    expect(req.endpoint_path).toBe('/v1/completions');
    expect(JSON.parse(req.body)).toEqual({ model: 't-prompt', prompt: 'The capital of France is', max_tokens: 4, stream: true });
    for (const t of [' Par', 'is', '.'])
      worker.chunk(req.request_id, `data: ${JSON.stringify({ object: 'text_completion', choices: [{ index: 0, text: t }] })}\n\n`);
    finish(worker, req.request_id);
    const stream = new TaskStream(gw, accepted.json.task_id);
    await stream.done;
    expect(tokens(stream.events)).toEqual([
      { t: ' Par', i: 0 },
      { t: 'is', i: 1 },
      { t: '.', i: 2 },
    ]);
    expect(stream.events.at(-1)).toMatchObject({ event: 'end', data: { tokens_out: 3 } });
    worker.close();
  });

  it('a task runs without any reader; two readers get every event; a late reader gets the replay; Last-Event-ID resumes', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['t-readers'] });
    expect((await submit(gw, chatTask('t-readers', { task_id: 'multi' }))).status).toBe(202);
    const req = await worker.next('request');
    worker.chunk(req.request_id, chatDelta('one'));
    const a = new TaskStream(gw, 'multi');
    const b = new TaskStream(gw, 'multi');
    await a.until((e) => tokens(e).length === 1);
    await b.until((e) => tokens(e).length === 1);
    worker.chunk(req.request_id, chatDelta('two'));
    worker.chunk(req.request_id, chatDelta('three'));
    finish(worker, req.request_id);
    await Promise.all([a.done, b.done]);
    expect(b.text).toBe(a.text);
    expect(tokens(a.events).map((t) => t.t)).toEqual(['one', 'two', 'three']);

    const late = await readStream(gw, 'multi');
    expect(late.text).toBe(a.text);
    const firstToken = a.events.find((e) => e.event === 'token')!;
    const resumed = await readStream(gw, 'multi', { 'last-event-id': String(firstToken.id) });
    expect(resumed.events).toEqual(a.events.filter((e) => e.id > firstToken.id));
    expect(tokens(resumed.events).map((t) => t.i)).toEqual([1, 2]);
    expect((await readStream(gw, 'multi', { 'last-event-id': String(a.events.length) })).text).toBe('');
    expect((await readStream(gw, 'multi', { 'last-event-id': 'abc' })).status).toBe(400);
    // An id the task never sent (an earlier task's with the same id, say) would skip events: refused.
    const future = await getJson(gw, '/v1/tasks/multi/stream', { 'last-event-id': String(a.events.length + 1) });
    expect(future.status).toBe(400);
    expect(future.json.error).toMatchObject({
      code: 'invalid_params',
      param: 'Last-Event-ID',
      message: `Last-Event-ID ${a.events.length + 1} is not an event of this task: its last event so far is ${a.events.length}`,
    });
    worker.close();
  });

  it('cancel while streaming: answered at once, no token after it, the worker gets cancel; cancel again and after completion are 200', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['t-cancel'] });
    expect((await submit(gw, chatTask('t-cancel', { task_id: 'stop-me' }))).status).toBe(202);
    const req = await worker.next('request');
    const stream = new TaskStream(gw, 'stop-me');
    worker.chunk(req.request_id, chatDelta('a') + chatDelta('b'));
    await stream.until((e) => tokens(e).length === 2);
    const cancelled = await cancel(gw, 'stop-me');
    expect(cancelled.status).toBe(200);
    expect(cancelled.json).toMatchObject({ task_id: 'stop-me', status: 'cancelled', tokens_out: 2, error: { code: 'cancelled', retriable: false } });
    const frame = await worker.next('cancel');
    expect(frame).toMatchObject({ request_id: req.request_id, reason: 'client_disconnect' });
    // The worker goes on for a while: nothing of it reaches the task.
    worker.chunk(req.request_id, chatDelta('late'));
    worker.complete(req.request_id, '', 200, { body: '' });
    await stream.done;
    expect(tokens(stream.events).map((t) => t.t)).toEqual(['a', 'b']);
    expect(stream.events.at(-1)).toMatchObject({ event: 'error', data: { code: 'cancelled', retriable: false } });
    expect(stream.events.at(-1)!.id).toBe(cancelled.json.last_event_id);
    const again = await cancel(gw, 'stop-me');
    expect(again.json).toEqual({ ...cancelled.json, decode_time_ms: again.json.decode_time_ms });
    expect(worker.count('cancel')).toBe(1);

    expect((await submit(gw, chatTask('t-cancel', { task_id: 'done-first' }))).status).toBe(202);
    const next = await worker.next('request');
    worker.chunk(next.request_id, chatDelta('x'));
    finish(worker, next.request_id);
    await new TaskStream(gw, 'done-first').done;
    const late = await cancel(gw, 'done-first');
    expect(late.status).toBe(200);
    expect(late.json).toMatchObject({ status: 'completed', tokens_out: 1, error: null });
    expect(worker.count('cancel')).toBe(1);
    worker.close();
  });

  it('a task belongs to its tenant: another tenant gets 404 and may use the same id', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['t-tenant'], max_concurrent: 4 });
    expect((await submit(gw, chatTask('t-tenant', { task_id: 'mine' }), { 'x-tenant-id': 'team-a' })).status).toBe(202);
    const other = { 'x-tenant-id': 'team-b' };
    expect((await getJson(gw, '/v1/tasks/mine', other)).status).toBe(404);
    expect((await cancel(gw, 'mine', other)).status).toBe(404);
    expect((await readStream(gw, 'mine', other)).status).toBe(404);
    const unknown = await getJson(gw, '/v1/tasks/nobody', other);
    expect(unknown.json.error).toMatchObject({ code: 'not_found', message: "Task 'nobody' not found" });
    expect((await submit(gw, chatTask('t-tenant', { task_id: 'mine' }), other)).status).toBe(202);
    const dup = await submit(gw, chatTask('t-tenant', { task_id: 'mine' }), { 'x-tenant-id': 'team-a' });
    expect(dup.status).toBe(409);
    expect(dup.json.error).toMatchObject({ code: 'conflict', message: "Task 'mine' already exists", check: 'task_id' });
    expect((await getJson(gw, '/v1/tasks/mine', { 'x-tenant-id': 'team-a' })).json.status).toBe('running');
    worker.close();
  });
});
