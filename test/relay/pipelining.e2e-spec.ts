import { connect, Socket } from 'node:net';
import { startGateway, TestGateway } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { chat } from '../support/http';

/** One raw HTTP/1.1 request; the last one of a pipeline asks the server to close afterwards. */
function rawRequest(body: string, correlationId: string, last: boolean): string {
  return (
    'POST /v1/chat/completions HTTP/1.1\r\n' +
    'Host: gateway\r\n' +
    'Content-Type: application/json\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    `X-Correlation-Id: ${correlationId}\r\n` +
    (last ? 'Connection: close\r\n' : '') +
    '\r\n' +
    body
  );
}

const sockets: Socket[] = [];

/** Writes all requests in one go on one connection; resolves with everything the server sent. */
function pipeline(baseUrl: string, requests: string[]): Promise<string> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(requests.join('')));
    sockets.push(socket);
    let received = '';
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => (received += d));
    socket.on('end', () => resolve(received));
    socket.on('error', reject);
  });
}

/** The status line and correlation id of each response, in the order they came on the wire. */
function responseHeads(raw: string): Array<{ status: string; correlationId: string | undefined }> {
  return [...raw.matchAll(/HTTP\/1\.1 (\d{3})[^\r]*\r\n((?:[^\r]+\r\n)*)\r\n/g)].map((m) => ({
    status: m[1],
    correlationId: /^x-correlation-id: *(.*)$/im.exec(m[2])?.[1],
  }));
}

describe('HTTP/1.1 pipelining', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway();
  });
  // A hung exchange must not keep the gateway's server from closing.
  afterEach(() => sockets.splice(0).forEach((s) => s.destroy()));
  afterAll(() => gw.close());

  async function requestsCounted(model: string): Promise<number> {
    const text = await (await fetch(`${gw.url}/metrics`)).text();
    const lines = text.split('\n').filter((l) => l.startsWith('switchboard_requests_total{') && l.includes(`model="${model}"`));
    return lines.reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
  }

  it('relays both of two pipelined requests and answers them in order', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['pipe'], max_concurrent: 2 });
    const done = pipeline(gw.url, [
      rawRequest(JSON.stringify(chat('pipe', { seq: 'one' })), 'pipe-1', false),
      rawRequest(JSON.stringify(chat('pipe', { seq: 'two' })), 'pipe-2', true),
    ]);
    const a = await worker.next('request');
    const b = await worker.next('request');
    const [first, second] = JSON.parse(a.body).seq === 'one' ? [a, b] : [b, a];
    // The second finishes first: its answer must still come after the first one.
    worker.complete(second.request_id, { answer: 'second-answer' });
    worker.complete(first.request_id, { answer: 'first-answer' });

    const raw = await done;
    expect(responseHeads(raw)).toEqual([
      { status: '200', correlationId: 'pipe-1' },
      { status: '200', correlationId: 'pipe-2' },
    ]);
    expect(raw.indexOf('first-answer')).toBeGreaterThan(-1);
    expect(raw.indexOf('first-answer')).toBeLessThan(raw.indexOf('second-answer'));
    expect(await requestsCounted('pipe')).toBe(2);
    worker.close();
  });

  it('answers a request pipelined behind a stream after the stream ends', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['pipe-stream'], max_concurrent: 2 });
    const done = pipeline(gw.url, [
      rawRequest(JSON.stringify(chat('pipe-stream', { stream: true })), 'stream-1', false),
      rawRequest(JSON.stringify(chat('pipe-stream', { seq: 'plain' })), 'plain-2', true),
    ]);
    const a = await worker.next('request');
    const b = await worker.next('request');
    const [stream, plain] = a.is_streaming ? [a, b] : [b, a];
    worker.chunk(stream.request_id, 'data: {"part":"one"}\n\n');
    worker.complete(plain.request_id, { answer: 'plain-answer' });
    worker.chunk(stream.request_id, 'data: {"part":"two"}\n\ndata: [DONE]\n\n');
    worker.complete(stream.request_id, '', 200, { body: '' });

    const raw = await done;
    expect(responseHeads(raw)).toEqual([
      { status: '200', correlationId: 'stream-1' },
      { status: '200', correlationId: 'plain-2' },
    ]);
    expect(raw.indexOf('data: [DONE]')).toBeGreaterThan(-1);
    expect(raw.indexOf('data: [DONE]')).toBeLessThan(raw.indexOf('plain-answer'));
    expect(await requestsCounted('pipe-stream')).toBe(2);
    worker.close();
  });

  it('cancels both requests on the worker when the client drops the connection', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['pipe-gone'], max_concurrent: 2 });
    const { port } = new URL(gw.url);
    const socket = connect(Number(port), '127.0.0.1', () =>
      socket.write(
        rawRequest(JSON.stringify(chat('pipe-gone', { seq: 1 })), 'gone-1', false) + rawRequest(JSON.stringify(chat('pipe-gone', { seq: 2 })), 'gone-2', false),
      ),
    );
    socket.on('error', () => undefined);
    const ids = [(await worker.next('request')).request_id, (await worker.next('request')).request_id];
    socket.destroy();
    const cancels = [await worker.next('cancel'), await worker.next('cancel')];
    expect(cancels.map((c) => c.request_id).sort()).toEqual([...ids].sort());
    expect(cancels.every((c) => c.reason === 'client_disconnect')).toBe(true);
    worker.close();
  });
});
