import { writeFileSync } from 'node:fs';
import { connect as h2connect } from 'node:http2';
import { join } from 'node:path';
import { selfSignedCert } from '../worker/support/tls-cert';
import { startGateway, TestGateway } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { chat, sleep } from '../support/http';
import { parseRaw, rawSocket, readUntilClosed } from './conn-support';

/** Writes `text` one byte at a time, `everyMs` apart, until the socket closes or the text is out. */
async function trickle(socket: import('node:net').Socket, text: string, everyMs: number): Promise<void> {
  for (const ch of text) {
    if (socket.destroyed) return;
    socket.write(ch, () => undefined);
    await sleep(everyMs);
  }
}

describe('conn: client connection timeouts (HTTP_REQUEST_TIMEOUT_SECS, HTTP_HEADERS_TIMEOUT_SECS, keep-alive)', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({
      HTTP_REQUEST_TIMEOUT_SECS: '2',
      HTTP_HEADERS_TIMEOUT_SECS: '1',
      HTTP_KEEP_ALIVE_TIMEOUT_SECS: '1',
      HEARTBEAT_INTERVAL_SECS: '0.5',
      HEARTBEAT_TIMEOUT_SECS: '20',
    });
  });
  afterAll(() => gw.close());

  it('cuts a client that sends its headers, then one body byte at a time, near HTTP_REQUEST_TIMEOUT_SECS', async () => {
    const socket = await rawSocket(gw.url);
    const outcome = readUntilClosed(socket, 40_000);
    socket.write('POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n');
    void trickle(socket, '{'.repeat(1000), 400);
    const { closedAfterMs } = await outcome;
    // The deadline is 2 s; Node checks at most a second late. Generous slack for a loaded machine,
    // far below Node's unpatched 30 s check period (and the 0 = never of before).
    expect(closedAfterMs).toBeGreaterThanOrEqual(1500);
    expect(closedAfterMs).toBeLessThan(8000);
  });

  it('cuts a client that trickles its request headers near HTTP_HEADERS_TIMEOUT_SECS', async () => {
    const socket = await rawSocket(gw.url);
    const outcome = readUntilClosed(socket, 40_000);
    void trickle(socket, `GET /v1/models HTTP/1.1\r\nhost: x\r\nx-slow: ${'a'.repeat(200)}\r\n\r\n`, 200);
    const { closedAfterMs, text } = await outcome;
    expect(closedAfterMs).toBeGreaterThanOrEqual(700);
    expect(closedAfterMs).toBeLessThan(7000);
    expect(parseRaw(text).status ?? 408).toBe(408);
  });

  it('closes an idle keep-alive connection after HTTP_KEEP_ALIVE_TIMEOUT_SECS', async () => {
    const socket = await rawSocket(gw.url);
    const outcome = readUntilClosed(socket, 40_000);
    socket.write('GET /v1/models HTTP/1.1\r\nhost: x\r\n\r\n');
    const { text, closedAfterMs } = await outcome;
    expect(parseRaw(text).status).toBe(200);
    expect(closedAfterMs).toBeLessThan(7000);
  });

  it('never cuts a streamed response that lasts well past the request timeout, nor its worker WebSocket', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['slow-stream'] });
    const pending = fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(chat('slow-stream', { stream: true })),
    });
    const req = await worker.next('request');
    const parts: string[] = [];
    worker.chunk(req.request_id, 'data: {"n":0}\n\n');
    const res = await pending;
    expect(res.status).toBe(200);
    // 5 s of a stream with a 3 s silence in it: more than the request timeout plus its check period.
    await sleep(3000);
    for (let i = 1; i <= 4; i++) {
      worker.chunk(req.request_id, `data: {"n":${i}}\n\n`);
      parts.push(`data: {"n":${i}}\n\n`);
      await sleep(500);
    }
    worker.complete(req.request_id, '', 200, { body: '' });
    expect(await res.text()).toBe(`data: {"n":0}\n\n${parts.join('')}`);
    // The worker's socket outlived both timeouts too, and still serves.
    expect(worker.closeState).toBeUndefined();
    const next = fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(chat('slow-stream')),
    });
    const req2 = await worker.next('request');
    worker.complete(req2.request_id, { ok: true });
    expect((await next).status).toBe(200);
    worker.close();
  });
});

describe('conn: HTTP_REQUEST_TIMEOUT_SECS on HTTP/2 streams (TLS)', () => {
  let gw: TestGateway;
  let ca: string;
  let base: string;
  beforeAll(async () => {
    const cert = selfSignedCert();
    ca = cert.cert;
    const keyFile = join(cert.certPath, '..', 'key.pem');
    writeFileSync(keyFile, cert.key);
    gw = await startGateway({ TLS_CERT_FILE: cert.certPath, TLS_KEY_FILE: keyFile, HTTP_REQUEST_TIMEOUT_SECS: '2', HTTP_HEADERS_TIMEOUT_SECS: '1' });
    base = gw.url.replace('http://', 'https://');
  });
  afterAll(() => gw.close());

  it('cancels a stream whose body trickles in past the deadline', async () => {
    const session = h2connect(base, { ca });
    session.on('error', () => undefined);
    const started = Date.now();
    const req = session.request({ ':path': '/v1/chat/completions', ':method': 'POST', 'content-type': 'application/json', 'content-length': '1000' });
    req.on('error', () => undefined);
    req.on('data', () => undefined);
    const closed = new Promise<number>((resolve) => req.once('close', () => resolve(Date.now() - started)));
    let stop = false;
    void (async () => {
      for (let i = 0; i < 1000 && !stop && !req.destroyed; i++) {
        req.write('{');
        await sleep(400);
      }
    })();
    const after = await Promise.race([closed, sleep(20_000).then(() => Infinity)]);
    stop = true;
    session.destroy();
    expect(after).toBeGreaterThanOrEqual(1500);
    expect(after).toBeLessThan(8000);
  });

  it('never cuts a streamed HTTP/2 response that lasts past the deadline', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl.replace('ws://', 'wss://'), { models: ['h2-stream'] }, { ca });
    const session = h2connect(base, { ca });
    session.on('error', () => undefined);
    const req = session.request({ ':path': '/v1/chat/completions', ':method': 'POST', 'content-type': 'application/json' });
    req.end(JSON.stringify(chat('h2-stream', { stream: true })));
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => (text += d));
    const ended = new Promise<void>((resolve) => req.once('end', () => resolve()));
    const frame = await worker.next('request');
    worker.chunk(frame.request_id, 'data: 1\n\n');
    await sleep(3500);
    worker.chunk(frame.request_id, 'data: 2\n\n');
    worker.complete(frame.request_id, '', 200, { body: '' });
    await ended;
    expect(text).toBe('data: 1\n\ndata: 2\n\n');
    session.close();
    worker.close();
  });
});
