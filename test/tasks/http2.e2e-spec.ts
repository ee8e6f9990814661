import { connect } from 'node:http2';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startGateway, TestGateway } from '../support/gateway';
import { eventually } from '../support/http';
import { ScriptedWorker } from '../support/scripted-worker';
import { selfSignedCert, TestCert } from '../worker/support/tls-cert';
import { chatDelta, chatTask, finish, parseSse } from './support';

/** Task streams over HTTP/2 (TLS), the transport the spec prefers for SSE. */
describe('task API over HTTP/2', () => {
  let gw: TestGateway;
  let tls: TestCert;
  let base: string;
  beforeAll(async () => {
    tls = selfSignedCert();
    const keyFile = join(tls.certPath, '..', 'key.pem');
    writeFileSync(keyFile, tls.key);
    gw = await startGateway({ TLS_CERT_FILE: tls.certPath, TLS_KEY_FILE: keyFile });
    base = gw.url.replace('http://', 'https://');
  });
  afterAll(() => gw.close());

  function h2(
    method: string,
    path: string,
    body?: string,
    onData?: (text: string) => void,
  ): Promise<{ status: number; headers: Record<string, unknown>; text: string }> {
    return new Promise((resolve, reject) => {
      const session = connect(base, { ca: tls.cert });
      session.on('error', reject);
      const req = session.request({ ':path': path, ':method': method, 'content-type': 'application/json' });
      let text = '';
      let headers: Record<string, unknown> = {};
      req.on('response', (h) => (headers = h));
      req.on('data', (d) => {
        text += d;
        onData?.(text);
      });
      req.on('end', () => {
        session.close();
        resolve({ status: Number(headers[':status']), headers, text });
      });
      req.on('error', reject);
      req.end(body);
    });
  }

  it('submits and streams a task over HTTP/2', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl.replace('ws://', 'wss://'), { models: ['h2-task'] }, { ca: tls.cert });
    const accepted = await h2('POST', '/v1/tasks', JSON.stringify(chatTask('h2-task', { task_id: 'over-h2' })));
    expect(accepted.status).toBe(202);
    const req = await worker.next('request');
    let seenStarted!: () => void;
    const started = new Promise<void>((resolve) => (seenStarted = resolve));
    const stream = h2('GET', '/v1/tasks/over-h2/stream', undefined, (text) => text.includes('event: started') && seenStarted());
    await started;
    worker.chunk(req.request_id, chatDelta('secure'));
    finish(worker, req.request_id);
    const res = await stream;
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/event-stream');
    const events = parseSse(res.text).events;
    expect(events.filter((e) => e.event !== 'metrics').map((e) => [e.event, e.data.t])).toEqual([
      ['started', undefined],
      ['token', 'secure'],
      ['end', undefined],
    ]);
    worker.close();
  });

  it('a reader that stops reading (HTTP/2 flow control) gets the whole stream once it reads again', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl.replace('ws://', 'wss://'), { models: ['h2-slow'] }, { ca: tls.cert });
    expect((await h2('POST', '/v1/tasks', JSON.stringify(chatTask('h2-slow', { task_id: 'slow-h2' })))).status).toBe(202);
    const req = await worker.next('request');
    const session = connect(base, { ca: tls.cert });
    const stream = session.request({ ':path': '/v1/tasks/slow-h2/stream', ':method': 'GET' });
    stream.pause();
    await new Promise((resolve) => stream.once('response', resolve));
    // Far more than an HTTP/2 stream window (and within the task's 2 MiB buffer).
    const piece = 'y'.repeat(60_000);
    for (let i = 0; i < 25; i++) worker.chunk(req.request_id, chatDelta(`${i}:${piece}`));
    finish(worker, req.request_id);
    // The task ends whether or not its reader reads.
    await eventually(async () => JSON.parse((await h2('GET', '/v1/tasks/slow-h2')).text).status === 'completed');
    const text = await new Promise<string>((resolve, reject) => {
      let out = '';
      stream.setEncoding('utf8');
      stream.on('data', (d: string) => (out += d));
      stream.on('end', () => resolve(out));
      stream.on('error', reject);
      stream.resume();
    });
    session.close();
    const events = parseSse(text).events;
    expect(events.map((e) => e.id)).toEqual(events.map((_, i) => i + 1));
    expect(events.filter((e) => e.event === 'token').map((e) => e.data.i)).toEqual(Array.from({ length: 25 }, (_, i) => i));
    expect(events.at(-1)).toMatchObject({ event: 'end', data: { tokens_out: 25 } });
    worker.close();
  });
});
