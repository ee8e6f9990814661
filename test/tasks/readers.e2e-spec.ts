import { get, IncomingMessage } from 'node:http';
import { startGateway, TestGateway } from '../support/gateway';
import { eventually } from '../support/http';
import { ScriptedWorker } from '../support/scripted-worker';
import { chatDelta, chatTask, finish, getJson, parseSse, readStream, submit, TaskStream } from './support';

/** A reader that stops reading its socket until `resume()`: the gateway's writes back up behind it. */
function stalledReader(gw: TestGateway, id: string): Promise<{ res: IncomingMessage; text: () => Promise<string> }> {
  return new Promise((resolve, reject) => {
    get(`${gw.url}/v1/tasks/${id}/stream`, (res) => {
      res.pause();
      const text = () =>
        new Promise<string>((done, fail) => {
          let out = '';
          res.setEncoding('utf8');
          res.on('data', (d: string) => (out += d));
          res.on('end', () => done(out));
          res.on('error', fail);
          res.resume();
        });
      resolve({ res, text });
    }).on('error', reject);
  });
}

describe('task API: readers', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({ TASKS_MAX_BYTES: String(64 * 1024 * 1024), TASKS_MAX_READERS: '2' });
  });
  afterAll(() => gw.close());

  it("a slow reader holds up neither its task, nor the task's other readers, nor other tasks; it gets the whole stream once it reads again", async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['t-slow'], max_concurrent: 2 });
    expect((await submit(gw, chatTask('t-slow', { task_id: 'big' }))).status).toBe(202);
    const req = await worker.next('request');
    const stalled = await stalledReader(gw, 'big');
    const fast = new TaskStream(gw, 'big');
    await fast.until((e) => e.some((x) => x.event === 'started'));

    // Far more than the socket buffers of a loopback connection hold.
    const piece = 'x'.repeat(60_000);
    for (let i = 0; i < 200; i++) worker.chunk(req.request_id, chatDelta(`${i}:${piece}`));
    finish(worker, req.request_id);
    await fast.done;
    expect(fast.events.filter((e) => e.event === 'token')).toHaveLength(200);
    expect((await getJson(gw, '/v1/tasks/big')).json).toMatchObject({ status: 'completed', tokens_out: 200 });

    // Another task on the same worker runs and streams meanwhile.
    expect((await submit(gw, chatTask('t-slow', { task_id: 'small' }))).status).toBe(202);
    const other = await worker.next('request', (f) => f.request_id !== req.request_id);
    const small = new TaskStream(gw, 'small');
    worker.chunk(other.request_id, chatDelta('fine'));
    finish(worker, other.request_id);
    await small.done;
    expect(small.events.at(-1)).toMatchObject({ event: 'end', data: { tokens_out: 1 } });

    const text = await stalled.text();
    expect(stalled.res.statusCode).toBe(200);
    expect(text).toBe(fast.text);
    expect(parseSse(text).events.map((e) => e.id)).toEqual(fast.events.map((_, i) => i + 1));
    worker.close();
  });

  it('an unfinished task takes at most tasks.max_readers streams (409 past it); a closed one frees its place; a finished task any number', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['t-readers'] });
    expect((await submit(gw, chatTask('t-readers', { task_id: 'popular' }))).status).toBe(202);
    const req = await worker.next('request');
    const first = new TaskStream(gw, 'popular');
    const second = new TaskStream(gw, 'popular');
    await Promise.all([first, second].map((s) => s.until((e) => e.some((x) => x.event === 'started'))));
    const third = await getJson(gw, '/v1/tasks/popular/stream');
    expect(third.status).toBe(409);
    expect(third.json.error).toMatchObject({ code: 'conflict', message: expect.stringContaining('tasks.max_readers') });
    first.close();
    // Its place is free once the gateway has seen it close.
    const again = (await eventually(async () => {
      const s = new TaskStream(gw, 'popular');
      await s.until((e) => e.some((x) => x.event === 'started')).catch(() => undefined);
      return s.status === 200 ? s : undefined;
    }))!;
    worker.chunk(req.request_id, chatDelta('hi'));
    finish(worker, req.request_id);
    await Promise.all([second.done, again.done]);
    expect(again.events.at(-1)).toMatchObject({ event: 'end' });
    const late = await Promise.all([1, 2, 3].map(() => readStream(gw, 'popular')));
    expect(late.map((r) => [r.status, r.text])).toEqual([1, 2, 3].map(() => [200, second.text]));
    worker.close();
  });
});
