/**
 * Issue 16 M1: a client that stops reading its stream costs only its own request. With one raw
 * client not reading a 30 MiB stream, another client's stream on the same worker flows at its
 * worker's pace (gaps measured here); once the slow client's backlog (STREAM_CLIENT_BUFFER_BYTES)
 * is full its request is cancelled with `client_too_slow` (a plain `client_disconnect` to a worker
 * that did not negotiate `cancel_reasons`), and the client reads an SSE error event after its data.
 */
import { connect, Socket } from 'node:net';
import { startGateway, TestGateway } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { chat, eventually, sleep } from '../support/http';
import { Dispatcher } from '../../src/dispatch/dispatcher.service';

/** The worker's own pace on the flowing stream, and how many chunks it sends. */
const FAST_PACE_MS = 25;
const FAST_CHUNKS = 80;
const SLOW_TOTAL = 30 * 1024 * 1024;
const SLOW_PIECE = `data: ${'z'.repeat(64 * 1024 - 8)}\n\n`;

/** A raw HTTP/1.1 client on its own socket; `paused` ones read nothing until resumed. */
function rawStream(gw: TestGateway, model: string, paused: boolean): { socket: Socket; text: () => string; ended: Promise<void>; bytes: () => number } {
  const body = JSON.stringify(chat(model, { stream: true }));
  const socket = connect(Number(new URL(gw.url).port), '127.0.0.1');
  const parts: Buffer[] = [];
  let bytes = 0;
  socket.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  socket.on('data', (d: Buffer) => {
    parts.push(d);
    bytes += d.length;
  });
  if (paused) socket.pause();
  const ended = new Promise<void>((resolve) => {
    socket.on('data', () => {
      if (Buffer.concat(parts.slice(-2)).toString('latin1').endsWith('0\r\n\r\n')) resolve();
    });
    socket.on('close', () => resolve());
  });
  return { socket, text: () => Buffer.concat(parts).toString('latin1'), ended, bytes: () => bytes };
}

async function scenario(gw: TestGateway, features: string[] | undefined, expectedReason: string): Promise<void> {
  const model = `slow-${expectedReason}`;
  const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: [model], max_concurrent: 2, ...(features ? { features } : {}) });
  const dispatcher = gw.app.get(Dispatcher);

  const slow = rawStream(gw, model, true);
  const slowReq = await worker.next('request');
  const fast = rawStream(gw, model, false);
  const fastReq = await worker.next('request');

  // The fast client: when each of its markers arrives, against when the worker sent it.
  const sentAt: number[] = [];
  const seenAt: number[] = [];
  fast.socket.on('data', () => {
    const text = fast.text();
    while (seenAt.length < sentAt.length && text.includes(`fast-${seenAt.length}.`)) seenAt.push(Date.now());
  });

  let cancel: Record<string, unknown> | undefined;
  let cancelAt = Infinity;
  const cancelled = worker
    .next('cancel', (f) => f.request_id === slowReq.request_id, 60_000)
    .then((f) => {
      cancelAt = Date.now();
      cancel = f;
    });
  // The slow stream: produced as fast as a backend would, until the gateway cancels it.
  const slowLoop = (async () => {
    for (let sent = 0; sent < SLOW_TOTAL && !cancel; sent += SLOW_PIECE.length) {
      worker.chunk(slowReq.request_id as string, SLOW_PIECE);
      await sleep(1);
    }
  })();
  // The other stream on the same worker, at its own pace.
  for (let i = 0; i < FAST_CHUNKS; i++) {
    sentAt.push(Date.now());
    worker.chunk(fastReq.request_id as string, `data: fast-${i}.\n\n`);
    await sleep(FAST_PACE_MS);
  }
  worker.complete(fastReq.request_id as string, '', 200, { body: '' });
  await fast.ended;
  await slowLoop;
  await cancelled;

  // Every marker arrived, each within 100 ms of its sending (plus slack for a loaded machine);
  // before the fix the whole worker socket stopped for the slow client and this stream stalled.
  expect(seenAt).toHaveLength(FAST_CHUNKS);
  const delays = seenAt.map((t, i) => t - sentAt[i]);
  const gaps = seenAt.slice(1).map((t, i) => t - seenAt[i] - (sentAt[i + 1] - sentAt[i]));
  const maxDelay = Math.max(...delays);
  const maxExtraGap = Math.max(...gaps);

  if (process.env.TEST_LOGS) console.log(`fast stream: max delay ${maxDelay} ms, max gap beyond pace ${maxExtraGap} ms`);
  expect(maxExtraGap).toBeLessThan(100 + 400);
  expect(maxDelay).toBeLessThan(100 + 400);
  expect(fast.text()).toContain('fast-79.');
  // The slow client's backlog filled while the other stream was still flowing (the case measured).
  expect(cancelAt).toBeLessThan(seenAt[FAST_CHUNKS - 1]);

  // The slow request was cancelled with the negotiated reason, long before its 30 MiB were sent.
  expect(cancel).toMatchObject({ type: 'cancel', request_id: slowReq.request_id, reason: expectedReason });
  // Its client reads what was buffered for it, then the error event, then the end of the response.
  slow.socket.resume();
  await slow.ended;
  expect(slow.bytes()).toBeLessThan(SLOW_TOTAL * 0.75);
  const text = slow.text();
  expect(text.startsWith('HTTP/1.1 200')).toBe(true);
  expect(text).toMatch(/event: error\ndata: \{.*"code":"client_too_slow".*\}\n\n/);
  // Nothing stays counted against the gateway's buffer budget once both clients are done.
  await eventually(() => dispatcher.buffers.total === 0, 10_000);
  slow.socket.destroy();
  fast.socket.destroy();
  worker.close();
}

describe('slow client: its own request only (STREAM_CLIENT_BUFFER_BYTES)', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({ STREAM_CLIENT_BUFFER_BYTES: String(1024 * 1024), SLOW_CLIENT_TIMEOUT_SECS: '60' });
  });
  afterAll(() => gw.close());

  it('a client not reading a 30 MiB stream does not slow another stream on the same worker; it is cancelled client_too_slow (worker negotiated cancel_reasons)', async () => {
    await scenario(gw, ['cancel_reasons'], 'client_too_slow');
  }, 90_000);

  it('the same with a worker that did not negotiate cancel_reasons: it gets a plain cancel (client_disconnect)', async () => {
    await scenario(gw, undefined, 'client_disconnect');
  }, 90_000);
});

describe('slow client: stuck past SLOW_CLIENT_TIMEOUT_SECS with room left in its backlog', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({ STREAM_CLIENT_BUFFER_BYTES: String(64 * 1024 * 1024), SLOW_CLIENT_TIMEOUT_SECS: '1' });
  });
  afterAll(() => gw.close());

  it('is cancelled client_too_slow and its connection is cut, which frees what was held for it', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['stuck'], features: ['cancel_reasons'] });
    const dispatcher = gw.app.get(Dispatcher);
    const stuck = rawStream(gw, 'stuck', true);
    const closed = new Promise<void>((resolve) => stuck.socket.on('close', () => resolve()));
    const req = await worker.next('request');
    for (let i = 0; i < 300 && dispatcher.buffers.total === 0; i++) {
      worker.chunk(req.request_id as string, SLOW_PIECE);
      await sleep(2);
    }
    expect(dispatcher.buffers.total).toBeGreaterThan(0); // its socket is full: the gateway holds the rest
    expect(await worker.next('cancel', (f) => f.request_id === req.request_id, 10_000)).toMatchObject({ reason: 'client_too_slow' });
    // Its connection is cut (a paused client notices only when it reads again), freeing what was held.
    await eventually(() => dispatcher.buffers.total === 0, 10_000);
    stuck.socket.on('error', () => undefined);
    stuck.socket.resume();
    await closed;
    worker.close();
  });
});
