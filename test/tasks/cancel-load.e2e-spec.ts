import { startGateway, TestGateway } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { cancel, chatDelta, chatTask, submit, TaskStream } from './support';

/**
 * A worker that streams a token every couple of milliseconds for every request it has, and keeps
 * going for a few chunks after the gateway's `cancel` (as a real backend does) before it completes.
 */
function streamForever(worker: ScriptedWorker): { stop: () => void; requests: Set<string>; cancels: string[] } {
  const timers = new Map<string, NodeJS.Timeout>();
  const requests = new Set<string>();
  const cancels: string[] = [];
  worker.ws.on('message', (data) => {
    const frame = JSON.parse(data.toString());
    if (frame.type === 'request') {
      requests.add(frame.request_id);
      let n = 0;
      timers.set(
        frame.request_id,
        setInterval(() => worker.chunk(frame.request_id, chatDelta(`${n++} `)), 2),
      );
    } else if (frame.type === 'cancel') {
      cancels.push(frame.request_id);
      let late = 0;
      clearInterval(timers.get(frame.request_id));
      const t = setInterval(() => {
        if (late++ < 3) worker.chunk(frame.request_id, chatDelta('late '));
        else {
          clearInterval(t);
          worker.complete(frame.request_id, '', 200, { body: '' });
        }
      }, 1);
      timers.set(frame.request_id, t);
    }
  });
  return { stop: () => timers.forEach((t) => clearInterval(t)), requests, cancels };
}

describe('task API: race-free cancel under load', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({ TASKS_POSITION_INTERVAL_SECS: '0.05' });
  });
  afterAll(() => gw.close());

  it('many concurrent cancels of running and queued tasks: no stream gets a token after its cancel was answered', async () => {
    const workers = await Promise.all(Array.from({ length: 4 }, () => ScriptedWorker.register(gw.workerUrl, { models: ['busy'], max_concurrent: 8 })));
    const drivers = workers.map((w) => streamForever(w.worker));
    const ids = Array.from({ length: 48 }, (_, i) => `load-${i}`);
    for (const id of ids) expect((await submit(gw, chatTask('busy', { task_id: id }))).status).toBe(202);
    const streams = new Map(ids.map((id) => [id, new TaskStream(gw, id)]));
    // 32 run (and stream), 16 wait.
    const running = ids.slice(0, 32);
    await Promise.all(running.map((id) => streams.get(id)!.until((e) => e.filter((x) => x.event === 'token').length >= 2)));

    // Cancelled in a shuffled order, all at once: slots freed by cancels let queued tasks start meanwhile.
    const order = [...ids].sort(() => Math.random() - 0.5);
    const answers = await Promise.all(order.map(async (id) => [id, await cancel(gw, id)] as const));
    await Promise.all([...streams.values()].map((s) => s.done));
    drivers.forEach((d) => d.stop());

    for (const [id, answer] of answers) {
      expect([id, answer.status, answer.json.status]).toEqual([id, 200, 'cancelled']);
      const events = streams.get(id)!.events;
      const tokenEvents = events.filter((e) => e.event === 'token');
      // Every token the stream got is one the cancel answer counted, in order, and none came after.
      expect([id, tokenEvents.length]).toEqual([id, answer.json.tokens_out]);
      expect(tokenEvents.map((e) => e.data.i)).toEqual(tokenEvents.map((_, i) => i));
      const last = events.at(-1)!;
      expect([id, last.event, last.data.code, last.id]).toEqual([id, 'error', 'cancelled', answer.json.last_event_id]);
      expect(events.map((e) => e.id)).toEqual(events.map((_, i) => i + 1));
    }
    // Every request a worker got was cancelled on it exactly once.
    for (const d of drivers) {
      expect([...d.requests].sort()).toEqual([...d.cancels].sort());
      expect(new Set(d.cancels).size).toBe(d.cancels.length);
    }
    expect(drivers.reduce((n, d) => n + d.requests.size, 0)).toBeGreaterThanOrEqual(32);
    workers.forEach((w) => w.worker.close());
  });
});
