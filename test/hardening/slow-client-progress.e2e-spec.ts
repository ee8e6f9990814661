/**
 * Review fix to the slow-client cut-off (issue 16, M1): a client is "too slow" only when it took
 * no bytes for the whole SLOW_CLIENT_TIMEOUT_SECS. A client downloading a big answer slowly but
 * steadily, for several times the timeout, gets all of it; one that reads nothing is cut.
 */
import { connect, Socket } from 'node:net';
import { startGateway, TestGateway } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { chat, eventually } from '../support/http';
import { Dispatcher } from '../../src/dispatch/dispatcher.service';

const BODY_BYTES = 24 * 1024 * 1024;
const PIECE = 1024 * 1024;

function rawRequest(body: string): string {
  return `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

/**
 * A raw client that reads nothing until `start(perTick)`, then at most about `perTick` bytes every
 * 100 ms (paused once the window's share has arrived); `done` is all it got once the connection ended.
 */
function slowReader(gw: TestGateway, model: string, sockets: Socket[]): { done: Promise<number>; start: (perTick: number) => void } {
  const client = connect(Number(new URL(gw.url).port), '127.0.0.1');
  sockets.push(client);
  client.on('error', () => undefined);
  client.pause();
  client.write(rawRequest(JSON.stringify(chat(model))));
  let got = 0;
  let window = 0;
  let timer: NodeJS.Timeout | undefined;
  const done = new Promise<number>((resolve) => {
    client.on('end', () => resolve(got));
    client.on('close', () => resolve(got));
  });
  const start = (perTick: number) => {
    client.on('data', (d: Buffer) => {
      got += d.length;
      window += d.length;
      if (window >= perTick) client.pause();
    });
    timer = setInterval(() => {
      window = 0;
      client.resume();
    }, 100);
    client.resume();
  };
  void done.then(() => clearInterval(timer));
  return { done, start };
}

describe('SLOW_CLIENT_TIMEOUT_SECS counts time without progress, not time backed up', () => {
  let gw: TestGateway;
  let dispatcher: Dispatcher;
  const sockets: Socket[] = [];
  beforeAll(async () => {
    gw = await startGateway({ SLOW_CLIENT_TIMEOUT_SECS: '2' });
    dispatcher = gw.app.get(Dispatcher);
  });
  afterAll(async () => {
    sockets.forEach((s) => s.destroy());
    await gw.close();
  });

  async function answerWithBigBody(worker: ScriptedWorker): Promise<string> {
    const req = await worker.next('request');
    for (let sent = 0; sent < BODY_BYTES; sent += PIECE) worker.chunk(req.request_id as string, 'x'.repeat(PIECE));
    worker.send({ type: 'response_complete', request_id: req.request_id, status_code: 200, headers: { 'content-type': 'text/plain' } });
    return req.request_id as string;
  }

  it('a client reading a 24 MiB answer slowly but steadily, for well past the timeout, gets the whole body', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['steady'], max_concurrent: 2 });
    const reader = slowReader(gw, 'steady', sockets);
    await answerWithBigBody(worker);
    const startedAt = Date.now();
    // ~2.5 MB/s: 24 MiB take ~10 s, five timeouts. (Reads show as progress once the kernel's socket
    // buffers, a few MB, drain: a client must read some MB per timeout to be seen moving.)
    reader.start(256 * 1024);
    const got = await reader.done;
    // The gateway held bytes for it for several timeouts (else this test would prove nothing).
    expect(Date.now() - startedAt).toBeGreaterThan(4000);
    expect(got).toBeGreaterThan(BODY_BYTES); // headers + the whole body
    await eventually(() => dispatcher.buffers.total === 0, 10_000);
    worker.close();
  }, 90_000);

  it('a client that reads nothing is cut off after the timeout, and what was held for it is released', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['stalled'], max_concurrent: 2 });
    const reader = slowReader(gw, 'stalled', sockets);
    await answerWithBigBody(worker);
    await eventually(() => dispatcher.buffers.total > 0, 10_000);
    await eventually(() => dispatcher.buffers.total === 0, 30_000); // cut: the bytes leave with the connection
    // It now reads everything: only what the kernel buffers held before the cut arrives, never the whole body.
    reader.start(Number.MAX_SAFE_INTEGER);
    const got = await reader.done; // it ends: the connection was cut
    expect(got).toBeLessThan(BODY_BYTES);
    worker.close();
  }, 90_000);
});
