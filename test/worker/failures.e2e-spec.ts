import * as net from 'node:net';
import { cutBytes, gate, openAiChatSse } from './support/fake-backend';
import { requestFrame, useWorkerHarness, within } from './support/harness';

/** A loopback port with nothing listening on it. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

describe('worker daemon: cancels and failures', () => {
  const { env, startWorker } = useWorkerHarness();

  it('on cancel aborts the backend call (its socket closes) and sends response_complete 499 without a body', async () => {
    const sse = openAiChatSse('a long answer that never finishes', 'llama3');
    env.backend.enqueue({ kind: 'raw-stream', pieces: cutBytes(sse, 40).slice(0, 2), delayMs: 1, then: 'hang' });
    startWorker();
    const conn = await env.gateway.connection(1);
    const req = requestFrame({ stream: true });
    conn.send(req);
    const backendCall = await env.backend.waitForRelayed(1);
    await conn.next('response_chunk', (f) => f.request_id === req.request_id);

    conn.send({ type: 'cancel', request_id: req.request_id, reason: 'client_disconnect' });

    await within(backendCall.closedEarly, 'the backend socket to close');
    await within(backendCall.socketClosed, 'the backend socket to close');
    const done = await conn.final(req.request_id);
    expect(done).toEqual({ type: 'response_complete', request_id: req.request_id, status_code: 499 });
    conn.send({ type: 'ping' });
    expect((await conn.next('pong')).current_load).toBe(0);
  });

  it('cancels a request that is still waiting for the backend to answer at all', async () => {
    env.backend.enqueue({ kind: 'hang' });
    startWorker();
    const conn = await env.gateway.connection(1);
    const req = requestFrame();
    conn.send(req);
    const backendCall = await env.backend.waitForRelayed(1);
    conn.send({ type: 'cancel', request_id: req.request_id, reason: 'timeout' });
    await within(backendCall.socketClosed, 'the backend socket to close');
    expect((await conn.final(req.request_id)).status_code).toBe(499);
  });

  it('cancels a request queued locally without ever sending it to the backend', async () => {
    env.backend.enqueue({ kind: 'slow', delayMs: 200 });
    startWorker({ maxConcurrency: 1 });
    const conn = await env.gateway.connection(1);
    const running = requestFrame();
    const queued = requestFrame();
    conn.send(running);
    await env.backend.waitForRelayed(1);
    conn.send(queued);
    conn.send({ type: 'cancel', request_id: queued.request_id, reason: 'client_disconnect' });
    expect((await conn.final(queued.request_id)).status_code).toBe(499);
    expect((await conn.final(running.request_id)).status_code).toBe(200);
    expect(env.backend.relayed).toHaveLength(1);
  });

  it('reports a request whose id is already in flight with a connection-level error{duplicate_request_id}; the original still completes', async () => {
    const backendAnswer = gate();
    env.backend.enqueue({ kind: 'gated', until: backendAnswer.until });
    const worker = startWorker({ maxConcurrency: 2 });
    const conn = await env.gateway.connection(1);
    const req = requestFrame();
    conn.send(req);
    await env.backend.waitForRelayed(1);

    conn.send(req); // same request_id again
    expect(await conn.next('error', (f) => f.code === 'duplicate_request_id')).toEqual({
      type: 'error',
      code: 'duplicate_request_id',
      message: expect.stringContaining(`request ${req.request_id} is already in flight`),
    });
    conn.send({ type: 'ping' });
    expect((await conn.next('pong')).current_load).toBe(1);

    backendAnswer.open();
    const done = await conn.next('response_complete', (f) => f.request_id === req.request_id);
    expect(done.status_code).toBe(200);
    expect(conn.framesFor(req.request_id).map((f) => f.type)).toEqual(['response_complete']);
    expect(env.backend.relayed).toHaveLength(1);
    expect(worker.logs).toContainEqual(
      expect.objectContaining({ level: 'warn', request_id: req.request_id, msg: expect.stringContaining('already in flight') }),
    );
  });

  it('reports an unreachable backend with error{backend_unavailable} and keeps the connection', async () => {
    startWorker({ backendUrl: `http://127.0.0.1:${await closedPort()}` });
    const conn = await env.gateway.connection(1);
    const req = requestFrame();
    conn.send(req);
    const failure = await conn.final(req.request_id);
    expect(failure).toEqual({
      type: 'error',
      request_id: req.request_id,
      code: 'backend_unavailable',
      message: expect.stringContaining('ECONNREFUSED'),
    });
    conn.send({ type: 'ping', timestamp_unix_ms: 5 });
    expect(await conn.next('pong')).toEqual({ type: 'pong', current_load: 0, timestamp_unix_ms: 5 });
    expect(env.gateway.connections).toHaveLength(1);
  });

  it('reports a backend that dies mid-stream with error{backend_stream_failed} after the chunks it got, and keeps the connection', async () => {
    const sse = openAiChatSse('partial answer then the GPU box falls over', 'llama3');
    const pieces = cutBytes(sse, 60).slice(0, 3);
    env.backend.enqueue({ kind: 'raw-stream', pieces, delayMs: 5, then: 'destroy' });
    startWorker();
    const conn = await env.gateway.connection(1);
    const req = requestFrame({ stream: true });
    conn.send(req);
    const failure = await conn.final(req.request_id);
    expect(failure.type).toBe('error');
    expect(failure.code).toBe('backend_stream_failed');
    const frames = conn.framesFor(req.request_id);
    expect(frames.filter((f) => f.type === 'response_complete')).toHaveLength(0);
    expect(
      frames
        .filter((f) => f.type === 'response_chunk')
        .map((f) => f.chunk)
        .join(''),
    ).toBe(Buffer.concat(pieces).toString('utf8'));

    // Still usable: the next request on the same connection succeeds.
    const next = requestFrame();
    conn.send(next);
    expect((await conn.final(next.request_id)).status_code).toBe(200);
    expect(env.gateway.connections).toHaveLength(1);
  });

  it('logs and retries with backoff (no unhandled rejection) when the WebSocket cannot even be created', async () => {
    // workerConfig() does not validate like the CLI does, so the secret reaches `new WebSocket`,
    // which throws synchronously for a header value HTTP cannot carry.
    const worker = startWorker({ workerSecret: 'секрет\u0001' });
    const attempts: number[] = [];
    await within(
      new Promise<void>((resolve) =>
        worker.daemon.on('reconnect_scheduled', ({ attempt }) => {
          attempts.push(attempt);
          if (attempts.length === 2) resolve();
        }),
      ),
      'two reconnects to be scheduled',
    );
    expect(attempts).toEqual([1, 2]);
    expect(env.gateway.attempts).toHaveLength(0);
    expect(worker.logs).toContainEqual(
      expect.objectContaining({ level: 'error', msg: 'cannot open the gateway connection', error: expect.stringContaining('Invalid character') }),
    );
    expect(worker.rawLogs.join('')).not.toContain('секрет');
    expect(await worker.daemon.stop()).toBe(0);
  });

  it('reconnects (without crashing) after an unparseable frame from the gateway', async () => {
    const worker = startWorker();
    const first = await env.gateway.connection(1);
    await first.next('register');
    first.send('this is not json');
    const closed = await first.closed;
    expect(closed.code).toBe(1002);
    const second = await env.gateway.connection(2);
    expect((await second.next('register')).worker_name).toBe('test-worker');
    expect(worker.logs).toContainEqual(expect.objectContaining({ level: 'error', msg: expect.stringContaining('unparseable frame') }));
  });

  it('treats a frame with an unknown type or a missing field as unparseable too', async () => {
    startWorker();
    const first = await env.gateway.connection(1);
    first.send({ type: 'request', request_id: 'r-x' }); // no model, endpoint_path, …
    expect((await first.closed).code).toBe(1002);
    await env.gateway.connection(2);
  });
});
