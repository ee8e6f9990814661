import { startGateway, TestGateway } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { chatDelta, chatTask, finish, getJson, submit, TaskEvent, TaskStream } from './support';

const tokens = (events: TaskEvent[]) => events.filter((e) => e.event === 'token').map((e) => e.data.t);

describe('task API: worker loss, backend errors, budgets and bounded buffers', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({ TASKS_MAX_EVENTS: '16', TASKS_POSITION_INTERVAL_SECS: '0.02', TASKS_METRICS_INTERVAL_SECS: '60' });
  });
  afterAll(() => gw.close());

  it('a worker lost before the first token: the task is requeued and another worker serves it', async () => {
    const first = await ScriptedWorker.register(gw.workerUrl, { models: ['loss-early'] });
    expect((await submit(gw, chatTask('loss-early', { task_id: 'early' }))).status).toBe(202);
    const lost = await first.worker.next('request');
    const stream = new TaskStream(gw, 'early');
    await stream.until((e) => e.some((x) => x.event === 'started'));
    first.worker.kill();
    await first.worker.closed;
    // Back in the queue until a worker comes.
    await stream.until((e) => e.some((x) => x.event === 'started' && x.data.queue_position === 1));
    const second = await ScriptedWorker.register(gw.workerUrl, { models: ['loss-early'] });
    const again = await second.worker.next('request');
    expect(again.body).toBe(lost.body);
    second.worker.chunk(again.request_id, chatDelta('saved'));
    finish(second.worker, again.request_id);
    await stream.done;
    expect(tokens(stream.events)).toEqual(['saved']);
    expect(stream.events.filter((e) => e.event === 'started').map((e) => e.data.queue_position)).toEqual([0, 1, 0]);
    expect(stream.events.at(-1)!.event).toBe('end');
    expect((await getJson(gw, '/v1/tasks/early')).json.status).toBe('completed');
    second.worker.close();
  });

  it('a worker lost after the first token: the task ends with error (worker_disconnected) and nothing after it', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['loss-late'] });
    expect((await submit(gw, chatTask('loss-late', { task_id: 'late' }))).status).toBe(202);
    const req = await worker.next('request');
    const stream = new TaskStream(gw, 'late');
    worker.chunk(req.request_id, chatDelta('half'));
    await stream.until((e) => tokens(e).length === 1);
    worker.kill();
    await stream.done;
    const last = stream.events.at(-1)!;
    expect(last).toMatchObject({
      event: 'error',
      data: { code: 'worker_disconnected', kind: 'WORKER_RESET', retriable: true, pool_id: 'local', message: 'The worker disconnected during the response' },
    });
    expect(last.data.retry_after_ms).toBeGreaterThan(0);
    expect((await getJson(gw, '/v1/tasks/late')).json).toMatchObject({ status: 'failed', tokens_out: 1, error: { code: 'worker_disconnected' } });
  });

  it('a backend error answer ends the task with error naming the backend status', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['backend-400'] });
    expect((await submit(gw, chatTask('backend-400', { task_id: 'refused-by-backend' }))).status).toBe(202);
    const req = await worker.next('request');
    worker.complete(req.request_id, { error: { message: 'temperature must be at most 2' } }, 400);
    const stream = new TaskStream(gw, 'refused-by-backend');
    await stream.done;
    expect(stream.events.at(-1)).toMatchObject({
      event: 'error',
      data: { code: 'worker_error', retriable: false, backend_status: 400, message: 'The backend answered HTTP 400: temperature must be at most 2' },
    });
    worker.close();
  });

  it('a task whose events overflow its buffer ends with a clear error, and its worker gets cancel', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['chatty'] });
    expect((await submit(gw, chatTask('chatty', { task_id: 'overflow' }))).status).toBe(202);
    const req = await worker.next('request');
    const stream = new TaskStream(gw, 'overflow');
    for (let i = 0; i < 40; i++) worker.chunk(req.request_id, chatDelta(`w${i} `));
    const cancel = await worker.next('cancel');
    expect(cancel.request_id).toBe(req.request_id);
    await stream.done;
    const events = stream.events;
    expect(events).toHaveLength(17); // tasks.max_events, then the error
    expect(events.at(-1)).toMatchObject({ event: 'error', data: { code: 'stream_too_large', retriable: false } });
    expect(events.at(-1)!.data.message).toContain('tasks.max_events 16');
    expect((await getJson(gw, '/v1/tasks/overflow')).json.status).toBe('failed');
    worker.close();
  });

  it("streamed tokens count against the session's token budget: past it the task is cancelled with an error", async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['spender'] });
    // About 1 prompt token + max_tokens 5 fit in 12; a backend that ignores max_tokens does not.
    expect((await submit(gw, chatTask('spender', { task_id: 'spend', session_id: 'tight', max_tokens: 5, budget: { tokens: 12 } }))).status).toBe(202);
    const req = await worker.next('request');
    const stream = new TaskStream(gw, 'spend');
    worker.chunk(req.request_id, Array.from({ length: 14 }, (_, i) => chatDelta(`${i}`)).join(''));
    const cancel = await worker.next('cancel');
    expect(cancel.request_id).toBe(req.request_id);
    await stream.done;
    // 1 (prompt) + 11 tokens spend the 12; the 12th token is not delivered.
    expect(tokens(stream.events)).toEqual(Array.from({ length: 11 }, (_, i) => `${i}`));
    expect(stream.events.at(-1)).toMatchObject({
      event: 'error',
      data: { code: 'session_budget_exceeded', check: 'session_tokens', limit: 12, used: 12, retriable: false },
    });
    expect((await getJson(gw, '/v1/tasks/spend')).json.status).toBe('cancelled');
    worker.close();
  });

  it("a task that runs past its session's time budget is cancelled with an error event; the session is then refused", async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['slow'] });
    expect((await submit(gw, chatTask('slow', { task_id: 'slow-1', session_id: 'timed', budget: { time_secs: 0.2 } }))).status).toBe(202);
    const req = await worker.next('request');
    const stream = new TaskStream(gw, 'slow-1');
    worker.chunk(req.request_id, chatDelta('thinking'));
    // The worker says nothing more; the gateway stops the task when the session's time is spent.
    const cancel = await worker.next('cancel');
    expect(cancel).toMatchObject({ request_id: req.request_id, reason: 'timeout' });
    await stream.done;
    expect(stream.events.at(-1)).toMatchObject({
      event: 'error',
      data: { code: 'session_budget_exceeded', check: 'session_time', limit_secs: 0.2, retriable: false },
    });
    expect((await getJson(gw, '/v1/tasks/slow-1')).json.status).toBe('cancelled');
    const refused = await submit(gw, chatTask('slow', { session_id: 'timed', budget: { time_secs: 0.2 } }));
    expect(refused.status).toBe(429);
    expect(refused.json.error).toMatchObject({ code: 'session_budget_exceeded', check: 'session_time' });
    worker.close();
  });
});
