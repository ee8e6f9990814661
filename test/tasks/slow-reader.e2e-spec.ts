import { get, IncomingMessage } from 'node:http';
import { startGateway, TestGateway } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { chatDelta, chatTask, finish, getJson, parseSse, submit, TaskStream } from './support';

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

describe('task API: a slow reader', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({ TASKS_MAX_BYTES: String(64 * 1024 * 1024) });
  });
  afterAll(() => gw.close());

  it('holds up neither its task, nor the task\'s other readers, nor other tasks; it gets the whole stream once it reads again', async () => {
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
});
