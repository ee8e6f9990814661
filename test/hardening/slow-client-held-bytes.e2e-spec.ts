/**
 * Review fixes to the buffer budget (issue 16, M3): every byte counted against MAX_BUFFERED_BYTES
 * is released once, also for a response queued behind another on a pipelined connection whose
 * connection drops; and requests already admitted cannot grow the total past its hard ceiling
 * (1.25 × MAX_BUFFERED_BYTES) — the request that would pass it fails, its worker gets a cancel.
 */
import { connect, Socket } from 'node:net';
import { startGateway, TestGateway } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { chat, eventually, post } from '../support/http';
import { Dispatcher } from '../../src/dispatch/dispatcher.service';

const BOUND = 256 * 1024;

function rawRequest(body: string): string {
  return `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

describe('buffered bytes: released exactly once, and bounded for admitted work', () => {
  let gw: TestGateway;
  let dispatcher: Dispatcher;
  const sockets: Socket[] = [];
  beforeAll(async () => {
    gw = await startGateway({ MAX_BUFFERED_BYTES: String(BOUND), STREAM_CLIENT_BUFFER_BYTES: String(64 * 1024) });
    dispatcher = gw.app.get(Dispatcher);
  });
  afterEach(() => sockets.splice(0).forEach((s) => s.destroy()));
  afterAll(() => gw.close());

  it('a whole answer queued behind a stream on a pipelined connection is released when the connection closes; later requests still succeed', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['pipe-leak'], max_concurrent: 4 });
    for (let round = 0; round < 3; round++) {
      const client = connect(Number(new URL(gw.url).port), '127.0.0.1');
      sockets.push(client);
      client.on('error', () => undefined);
      client.on('data', () => undefined);
      // A (a long stream) then B (a large non-streaming answer), back to back on one connection.
      client.write(rawRequest(JSON.stringify(chat('pipe-leak', { stream: true }))) + rawRequest(JSON.stringify(chat('pipe-leak'))));
      const a = await worker.next('request');
      const b = await worker.next('request');
      const [stream, plain] = a.is_streaming ? [a, b] : [b, a];
      worker.chunk(stream.request_id as string, 'data: {"part":1}\n\n');
      // B completes; its body waits behind A's response, counted against the bound.
      worker.send({
        type: 'response_complete',
        request_id: plain.request_id,
        status_code: 200,
        headers: { 'content-type': 'application/json' },
        body: `{"t":"${'b'.repeat(BOUND)}"}`,
      });
      await eventually(() => dispatcher.buffers.total >= BOUND, 10_000);
      const refused = await post(gw.url, '/v1/chat/completions', chat('pipe-leak'));
      expect(refused.status).toBe(503); // it was counted
      client.destroy();
      await worker.next('cancel', (f) => f.request_id === stream.request_id);
      // Before the fix B's bytes stayed counted for good, and every later request got 503.
      await eventually(() => dispatcher.buffers.total === 0, 10_000);
      const later = post(gw.url, '/v1/chat/completions', chat('pipe-leak'));
      const next = await worker.next('request', (f) => !f.is_streaming && f.request_id !== plain.request_id);
      worker.complete(next.request_id as string, { ok: round });
      expect((await later).status).toBe(200);
    }
    worker.close();
  });

  it('collected chunks past the ceiling fail that request (stream_too_large alone, retriable gateway_overloaded when others fill it); its worker gets a cancel; the gateway serves the next request', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['ceiling'], max_concurrent: 4, features: ['cancel_reasons'] });
    const piece = `"${'c'.repeat(64 * 1024 - 2)}"`; // 64 KiB
    // One request alone past 1.25 × the bound: stream_too_large (retrying cannot help).
    const alone = post(gw.url, '/v1/chat/completions', chat('ceiling'));
    const r1 = await worker.next('request');
    for (let i = 0; i < 6; i++) worker.chunk(r1.request_id as string, piece);
    const cancel1 = await worker.next('cancel', (f) => f.request_id === r1.request_id);
    expect(cancel1.reason).toBe('stream_too_large');
    const failed = await alone;
    expect(failed.json.error).toMatchObject({ code: 'stream_too_large' });
    await eventually(() => dispatcher.buffers.total === 0, 10_000);

    // Two admitted requests that together would pass it: the one whose chunk does not fit gets a
    // retriable 503; the other is answered whole.
    const first = post(gw.url, '/v1/chat/completions', chat('ceiling', { n: 1 }));
    const second = post(gw.url, '/v1/chat/completions', chat('ceiling', { n: 2 }));
    const x = await worker.next('request', (f) => f.request_id !== r1.request_id);
    const y = await worker.next('request', (f) => f.request_id !== r1.request_id && f.request_id !== x.request_id);
    const [q1, q2] = JSON.parse(x.body as string).n === 1 ? [x, y] : [y, x];
    for (let i = 0; i < 3; i++) worker.chunk(q1.request_id as string, piece);
    for (let i = 0; i < 2; i++) worker.chunk(q2.request_id as string, piece);
    await eventually(() => dispatcher.buffers.total === 5 * 64 * 1024, 10_000);
    worker.chunk(q2.request_id as string, piece); // 6 × 64 KiB > 1.25 × 256 KiB
    const cancel2 = await worker.next('cancel', (f) => f.request_id === q2.request_id);
    expect(cancel2.reason).toBe('stream_too_large');
    const overloaded = await second;
    expect(overloaded.status).toBe(503);
    expect(overloaded.json.error).toMatchObject({ code: 'gateway_overloaded', retriable: true });
    worker.chunk(q1.request_id as string, piece);
    worker.send({ type: 'response_complete', request_id: q1.request_id, status_code: 200, headers: { 'content-type': 'application/json' } });
    const whole = await first;
    expect(whole.status).toBe(200);
    expect(whole.text).toBe(piece.repeat(4));
    await eventually(() => dispatcher.buffers.total === 0, 10_000);

    const next = post(gw.url, '/v1/chat/completions', chat('ceiling'));
    const r = await worker.next('request', (f) => ![r1.request_id, x.request_id, y.request_id].includes(f.request_id));
    worker.complete(r.request_id as string, { ok: true });
    expect((await next).status).toBe(200);
    worker.close();
  });

  it('a response_complete body past the ceiling is not taken on: the request fails, the next is served', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['ceiling-body'], max_concurrent: 2 });
    const big = post(gw.url, '/v1/chat/completions', chat('ceiling-body'));
    const r1 = await worker.next('request');
    worker.send({ type: 'response_complete', request_id: r1.request_id, status_code: 200, body: `"${'z'.repeat(2 * BOUND)}"` });
    expect((await big).json.error).toMatchObject({ code: 'stream_too_large' });
    expect(dispatcher.buffers.total).toBe(0);
    const next = post(gw.url, '/v1/chat/completions', chat('ceiling-body'));
    const r2 = await worker.next('request', (f) => f.request_id !== r1.request_id);
    worker.complete(r2.request_id as string, { ok: true });
    expect((await next).status).toBe(200);
    worker.close();
  });
});
