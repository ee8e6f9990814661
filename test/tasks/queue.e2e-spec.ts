import { startGateway, TestGateway } from '../support/gateway';
import { eventually } from '../support/http';
import { ScriptedWorker } from '../support/scripted-worker';
import { cancel, chatDelta, chatTask, finish, getJson, submit, TaskStream } from './support';

describe('task API: queue position, predicted start, keepalive', () => {
  let gw: TestGateway;
  const lines: Array<Record<string, any>> = [];
  beforeAll(async () => {
    const destination = { write: (chunk: string) => void lines.push(JSON.parse(chunk)) };
    gw = await startGateway(
      { LOG_LEVEL: 'debug', TASKS_POSITION_INTERVAL_SECS: '0.02', TASKS_KEEPALIVE_SECS: '0.05', TASKS_METRICS_INTERVAL_SECS: '0.02' },
      { logDestination: destination },
    );
  });
  afterAll(() => gw.close());

  it('a queued task learns its position and predicted start at once, and again as the queue moves', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['q-move'], max_concurrent: 1 });
    const ids = ['qa', 'qb', 'qc', 'qd'];
    const answers = [];
    for (const id of ids) answers.push(await submit(gw, chatTask('q-move', { task_id: id })));
    expect(answers.map((a) => [a.status, a.json.queue_position])).toEqual([
      [202, 0],
      [202, 1],
      [202, 2],
      [202, 3],
    ]);
    // Nothing of this pool has completed yet: no service time, no prediction.
    expect(answers[3].json.predicted_start_ms).toBeNull();

    const d = new TaskStream(gw, 'qd');
    const first = await d.until((e) => e.some((x) => x.event === 'started'));
    expect(first[0]).toEqual({ id: 1, event: 'started', data: { queue_position: 3, predicted_start_ms: null } });
    await d.until((e) => e.some((x) => x.event === 'metrics' && x.data.queue_depth === 3 && x.data.queue_position === 3));
    // Comments keep the connection alive while the task waits.
    await eventually(() => d.comments.includes('keepalive'));
    const queued = await getJson(gw, '/v1/tasks/qd');
    expect(queued.json).toMatchObject({ status: 'queued', queue_position: 3, predicted_start_ms: null, started_at: null });

    for (let served = 0; served < 3; served++) {
      const req = await worker.next('request');
      expect(JSON.parse(req.body).messages).toBeDefined();
      worker.chunk(req.request_id, chatDelta(`r${served}`));
      finish(worker, req.request_id);
      // The position drops with every departure; from the first completion on the pool has a service time.
      if (served < 2) await d.until((e) => e.some((x) => x.event === 'started' && x.data.queue_position === 2 - served));
    }
    const req = await worker.next('request');
    worker.chunk(req.request_id, chatDelta('mine'));
    finish(worker, req.request_id);
    await d.done;

    const started = d.events.filter((e) => e.event === 'started').map((e) => e.data);
    // (A prediction that moves by a second or more is repeated at the same position.)
    expect(started.map((s) => s.queue_position).filter((p, i, all) => p !== all[i - 1])).toEqual([3, 2, 1, 0]);
    const second = started.filter((s) => s.queue_position === 1).at(-1)!;
    expect(second.predicted_start_ms).toBeGreaterThan(0);
    expect(started.at(-1)).toEqual({ queue_position: 0, predicted_start_ms: 0 });
    // Every started precedes the first token; the stream ends with end.
    const firstToken = d.events.findIndex((e) => e.event === 'token');
    expect(d.events.slice(firstToken).some((e) => e.event === 'started')).toBe(false);
    expect(d.events.at(-1)!.event).toBe('end');
    expect(d.comments.length).toBeGreaterThan(0);

    // Admission and started log lines carry the position and the prediction.
    expect(lines.find((l) => l.msg === 'task admitted' && l.task_id === 'qd')).toMatchObject({
      queue_position: 3,
      predicted_start_ms: null,
      model: 'q-move',
      pool: 'local',
    });
    expect(lines.find((l) => l.msg === 'task started event' && l.task_id === 'qd' && l.queue_position === 1)?.predicted_start_ms).toBeGreaterThan(0);
    expect(lines.find((l) => l.msg === 'task started' && l.task_id === 'qd')).toMatchObject({ queue_position: 0, predicted_start_ms: 0 });
    const access = await eventually(() => lines.find((l) => l.msg === 'request completed' && l.task_id === 'qd'));
    expect(access).toMatchObject({ status: 202, queue_position: 3, predicted_start_ms: null });
    worker.close();
  });

  it('cancel while queued: the task leaves the queue at once and never reaches a worker', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['q-cancel'], max_concurrent: 1 });
    expect((await submit(gw, chatTask('q-cancel', { task_id: 'busy' }))).status).toBe(202);
    const busy = await worker.next('request');
    expect((await submit(gw, chatTask('q-cancel', { task_id: 'waiting' }))).json.queue_position).toBe(1);
    const stream = new TaskStream(gw, 'waiting');
    await stream.until((e) => e.some((x) => x.event === 'started'));
    const res = await cancel(gw, 'waiting');
    expect(res.json).toMatchObject({ status: 'cancelled', queue_position: 0, started_at: null, tokens_out: 0, error: { code: 'cancelled' } });
    await stream.done;
    expect(stream.events.map((e) => e.event).filter((e) => e !== 'metrics')).toEqual(['started', 'error']);
    // The slot frees: the next task is the one the worker gets, not the cancelled one.
    worker.complete(busy.request_id, '', 200, { body: '' });
    expect((await submit(gw, chatTask('q-cancel', { task_id: 'after', max_tokens: 7 }))).json.queue_position).toBe(0);
    const next = await worker.next('request');
    expect(JSON.parse(next.body).max_tokens).toBe(7);
    expect(worker.count('request')).toBe(2);
    expect(worker.count('cancel')).toBe(0);
    worker.close();
  });
});
