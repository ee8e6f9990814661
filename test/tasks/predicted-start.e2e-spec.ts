import { startGateway, TestGateway } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { chatDelta, chatTask, finish, submit, TaskStream } from './support';

describe('task API: predicted start from the service rate', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({ TASKS_POSITION_INTERVAL_SECS: '0.02' });
  });
  afterAll(() => gw.close());

  it('a pool whose requests never queued predicts from its first completion', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['direct'], max_concurrent: 1 });
    // Nothing completed yet: no service time, no prediction.
    expect((await submit(gw, chatTask('direct', { task_id: 'd1' }))).json).toMatchObject({ queue_position: 0, predicted_start_ms: 0 });
    const first = await worker.next('request');
    const early = await submit(gw, chatTask('direct', { task_id: 'd2' }));
    expect(early.json).toMatchObject({ queue_position: 1, predicted_start_ms: null });
    // d1 holds its slot ~200 ms and completes: d2 goes straight to the worker as it frees.
    await new Promise((r) => setTimeout(r, 200));
    worker.chunk(first.request_id, chatDelta('a'));
    finish(worker, first.request_id);
    const second = await worker.next('request');
    // One completion and one departure from the queue (a drain rate would need two): d3 has a
    // prediction, about half a service time (one slot, first in line).
    const waiting = await submit(gw, chatTask('direct', { task_id: 'd3' }));
    expect(waiting.json.queue_position).toBe(1);
    expect(waiting.json.predicted_start_ms).toBeGreaterThanOrEqual(50);
    expect(waiting.json.predicted_start_ms).toBeLessThan(1000);
    const stream = new TaskStream(gw, 'd3');
    worker.chunk(second.request_id, chatDelta('b'));
    finish(worker, second.request_id);
    const third = await worker.next('request');
    worker.chunk(third.request_id, chatDelta('c'));
    finish(worker, third.request_id);
    await stream.done;
    expect(stream.events.find((e) => e.event === 'started')?.data.predicted_start_ms).toBe(waiting.json.predicted_start_ms);
    worker.close();
  });
});
