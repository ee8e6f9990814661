import { cutBytes, openAiChatSse } from './support/fake-backend';
import { SECRET, requestFrame, useWorkerHarness, within } from './support/harness';

describe('worker daemon: models, drain, reconnect, heartbeat, shutdown', () => {
  const { env, startWorker } = useWorkerHarness();

  describe('models', () => {
    it('with models "*" registers the ids the backend lists and answers models_refresh with a fresh look-up', async () => {
      env.backend.models = ['llama-3.1-8b', 'qwen2.5-coder'];
      startWorker({ discoverModels: true, models: [], capabilities: { 'qwen2.5-coder': { tools: true } } });
      const conn = await env.gateway.connection(1);
      const register = await conn.next('register');
      expect(register.models).toEqual(['llama-3.1-8b', 'qwen2.5-coder']);
      expect(register.capabilities).toEqual({ 'qwen2.5-coder': { tools: true } });

      env.backend.models = ['llama-3.1-8b', 'mistral-small'];
      conn.send({ type: 'models_refresh', reason: 'admin' });
      expect(await conn.next('models_update')).toEqual({ type: 'models_update', models: ['llama-3.1-8b', 'mistral-small'], current_load: 0 });
    });

    it('keeps the last known list when the backend cannot answer a refresh, and logs it', async () => {
      env.backend.models = ['llama3'];
      const worker = startWorker({ discoverModels: true, models: [] });
      const conn = await env.gateway.connection(1);
      await conn.next('register');
      env.backend.modelsFailing = true;
      conn.send({ type: 'models_refresh' });
      expect((await conn.next('models_update')).models).toEqual(['llama3']);
      expect(worker.logs).toContainEqual(expect.objectContaining({ level: 'warn', msg: expect.stringContaining('model list unavailable') }));
    });

    it('with an explicit list registers that list, but answers models_refresh with what the backend lists', async () => {
      env.backend.models = ['a', 'c'];
      const worker = startWorker({ models: ['a', 'b'] });
      const conn = await env.gateway.connection(1);
      expect((await conn.next('register')).models).toEqual(['a', 'b']);
      expect(env.backend.requests.filter((r) => r.path === '/v1/models')).toHaveLength(0);
      conn.send({ type: 'models_refresh', reason: 'admin' });
      expect(await conn.next('models_update')).toEqual({ type: 'models_update', models: ['a', 'c'], current_load: 0 });
      expect(env.backend.requests.filter((r) => r.path === '/v1/models')).toHaveLength(1);
      expect(worker.daemon.status.models).toEqual(['a', 'c']);
      expect(worker.logs).toContainEqual(expect.objectContaining({ level: 'info', before: ['a', 'b'], after: ['a', 'c'] }));
    });

    it('with an explicit list keeps it on models_refresh when the backend cannot answer, and logs that', async () => {
      env.backend.modelsFailing = true;
      const worker = startWorker({ models: ['a', 'b'] });
      const conn = await env.gateway.connection(1);
      await conn.next('register');
      conn.send({ type: 'models_refresh' });
      expect((await conn.next('models_update')).models).toEqual(['a', 'b']);
      expect(env.backend.requests.filter((r) => r.path === '/v1/models')).toHaveLength(1);
      expect(worker.logs).toContainEqual(
        expect.objectContaining({ level: 'warn', msg: expect.stringContaining('model list unavailable'), models: ['a', 'b'] }),
      );
    });

    it('registers with no models while the backend is still loading, then sends models_update once it lists some', async () => {
      env.backend.modelsFailing = true;
      startWorker({ discoverModels: true, models: [], modelsPollIntervalMs: 50 });
      const conn = await env.gateway.connection(1);
      expect((await conn.next('register')).models).toEqual([]);
      env.backend.models = ['llama3'];
      env.backend.modelsFailing = false;
      expect((await conn.next('models_update')).models).toEqual(['llama3']);
    });
  });

  describe('graceful_shutdown from the gateway', () => {
    it('refuses new requests with 503 JSON, finishes in-flight ones, and reconnects after the gateway closes (service mode)', async () => {
      env.backend.enqueue({ kind: 'slow', delayMs: 200 });
      startWorker();
      const conn = await env.gateway.connection(1);
      const inFlight = requestFrame();
      conn.send(inFlight);
      await env.backend.waitForRelayed(1);
      conn.send({ type: 'graceful_shutdown', reason: 'maintenance', drain_timeout_secs: 30 });
      const late = requestFrame();
      conn.send(late);

      const refused = await conn.final(late.request_id);
      expect(refused.status_code).toBe(503);
      expect(refused.headers['content-type']).toBe('application/json');
      expect(JSON.parse(refused.body).error.code).toBe('worker_draining');
      expect((await conn.final(inFlight.request_id)).status_code).toBe(200);
      expect(env.backend.relayed).toHaveLength(1);

      await conn.close(1000, 'graceful shutdown complete');
      const again = await env.gateway.connection(2);
      expect((await again.next('register')).models).toEqual(['llama3']);
    });

    it('exits with code 0 after the drain when exitOnDrain is set', async () => {
      env.backend.enqueue({ kind: 'slow', delayMs: 100 });
      const worker = startWorker({ exitOnDrain: true });
      const conn = await env.gateway.connection(1);
      const inFlight = requestFrame();
      conn.send(inFlight);
      await env.backend.waitForRelayed(1);
      conn.send({ type: 'graceful_shutdown', reason: 'maintenance' });
      expect((await conn.final(inFlight.request_id)).status_code).toBe(200);
      await conn.close(1000, 'graceful shutdown complete');
      expect(await worker.daemon.waitForExit()).toBe(0);
      expect(env.gateway.attempts).toHaveLength(1);
    });
  });

  describe('reconnecting', () => {
    it('reconnects and registers again after the gateway goes away and comes back on the same port', async () => {
      const worker = startWorker();
      const first = await env.gateway.connection(1);
      await first.next('register');
      const port = env.gateway.port;
      await env.gateway.stop();
      await new Promise<void>((resolve) => worker.daemon.once('reconnect_scheduled', () => resolve()));
      await env.gateway.start(port);
      const second = await env.gateway.connection(2);
      expect((await second.next('register')).worker_name).toBe('test-worker');
      const req = requestFrame();
      second.send(req);
      expect((await second.final(req.request_id)).status_code).toBe(200);
    });

    it('backs off with growing delays while the gateway rejects the secret (close 1008), and never logs the secret', async () => {
      const worker = startWorker({ workerSecret: 'wrong-secret-value' });
      const delays: number[] = [];
      worker.daemon.on('reconnect_scheduled', ({ delayMs }) => delays.push(delayMs));
      await env.gateway.waitForAttempts(4);
      expect(env.gateway.connections).toHaveLength(0);
      expect(env.gateway.attempts.every((a) => a.secret === 'wrong-secret-value')).toBe(true);
      // 50 ms doubling (+ up to 20 % jitter), capped at 400 ms
      expect(delays[0]).toBeGreaterThanOrEqual(50);
      expect(delays[0]).toBeLessThanOrEqual(60);
      expect(delays[1]).toBeGreaterThanOrEqual(100);
      expect(delays[2]).toBeGreaterThanOrEqual(200);
      expect(worker.logs).toContainEqual(expect.objectContaining({ level: 'error', code: 1008, reason: 'worker authentication failed' }));
      expect(worker.rawLogs.join('')).not.toContain('wrong-secret-value');
    });

    it('drops a silent link after 3 heartbeat intervals and reconnects', async () => {
      const worker = startWorker({ heartbeatIntervalMs: 100 });
      const first = await env.gateway.connection(1);
      await first.next('register');
      // The fake gateway stays silent after the ack: no ping.
      const second = await env.gateway.connection(2);
      await second.next('register');
      expect(worker.logs).toContainEqual(expect.objectContaining({ msg: expect.stringContaining('nothing heard from the gateway') }));
    });

    it('aborts backend work when the link drops, since nobody can receive the answer', async () => {
      env.backend.enqueue({ kind: 'hang' });
      startWorker();
      const conn = await env.gateway.connection(1);
      conn.send(requestFrame({ stream: true }));
      const call = await env.backend.waitForRelayed(1);
      conn.ws.terminate();
      await within(call.socketClosed, 'the backend socket to close');
      const again = await env.gateway.connection(2);
      expect((await again.next('register')).current_load).toBe(0);
    });
  });

  describe('stop() (what SIGTERM/SIGINT do)', () => {
    it('stops routing, lets in-flight work finish, then closes 1000 and exits 0', async () => {
      env.backend.enqueue({ kind: 'slow', delayMs: 150 });
      const worker = startWorker();
      const conn = await env.gateway.connection(1);
      const inFlight = requestFrame();
      conn.send(inFlight);
      await env.backend.waitForRelayed(1);
      const exit = worker.daemon.stop();
      expect(await conn.next('models_update')).toEqual({ type: 'models_update', models: [], current_load: 1 });
      const late = requestFrame();
      conn.send(late);
      expect((await conn.final(late.request_id)).status_code).toBe(503);
      expect((await conn.final(inFlight.request_id)).status_code).toBe(200);
      expect(await conn.closed).toEqual({ code: 1000, reason: 'worker shutting down' });
      expect(await exit).toBe(0);
    });

    it('at the drain deadline reports error{worker_shutting_down} only for a stream that relayed chunks; requests with nothing relayed get no frame', async () => {
      const sse = openAiChatSse('a long answer that never finishes', 'llama3');
      env.backend.enqueue({ kind: 'raw-stream', pieces: cutBytes(sse, 40).slice(0, 1), delayMs: 1, then: 'hang' });
      env.backend.enqueue({ kind: 'hang' });
      env.backend.enqueue({ kind: 'hang' });
      const worker = startWorker({ drainTimeoutMs: 100, maxConcurrency: 3 });
      const conn = await env.gateway.connection(1);
      const started = requestFrame({ stream: true }); // chunks already relayed
      const waiting = requestFrame(); // non-streaming, backend has not answered
      const silentStream = requestFrame({ stream: true }); // streaming, no chunk yet
      const queued = requestFrame(); // over-assigned: waits in the local queue
      conn.send(started);
      const startedCall = await env.backend.waitForRelayed(1);
      await conn.next('response_chunk', (f) => f.request_id === started.request_id);
      conn.send(waiting);
      const waitingCall = await env.backend.waitForRelayed(2);
      conn.send(silentStream);
      const silentCall = await env.backend.waitForRelayed(3);
      conn.send(queued);
      conn.send({ type: 'ping' });
      expect((await conn.next('pong')).current_load).toBe(4);

      const exit = worker.daemon.stop();
      expect(await conn.final(started.request_id)).toEqual({
        type: 'error',
        request_id: started.request_id,
        code: 'worker_shutting_down',
        message: expect.any(String),
      });
      await Promise.all([startedCall, waitingCall, silentCall].map((call) => within(call.socketClosed, 'the backend calls to be aborted')));
      expect((await conn.closed).code).toBe(1000);
      expect(await exit).toBe(0);
      // Frames arrive in order before the close: these three really got nothing, so the gateway requeues them.
      expect(conn.framesFor(waiting.request_id)).toEqual([]);
      expect(conn.framesFor(silentStream.request_id)).toEqual([]);
      expect(conn.framesFor(queued.request_id)).toEqual([]);
      expect(env.backend.relayed).toHaveLength(3);
      expect(
        worker.logs
          .filter((l) => String(l.msg).includes('the gateway can requeue it'))
          .map((l) => l.request_id)
          .sort(),
      ).toEqual([waiting.request_id, silentStream.request_id, queued.request_id].sort());
    });

    it('a second stop aborts at once, also without frames for requests with nothing relayed yet', async () => {
      env.backend.enqueue({ kind: 'hang' });
      const worker = startWorker({ drainTimeoutMs: 60_000 });
      const conn = await env.gateway.connection(1);
      const req = requestFrame();
      conn.send(req);
      const call = await env.backend.waitForRelayed(1);
      void worker.daemon.stop();
      await conn.next('models_update');
      const exit = worker.daemon.stop();
      await within(call.socketClosed, 'the backend call to be aborted');
      expect((await conn.closed).code).toBe(1000);
      expect(await exit).toBe(0);
      expect(conn.framesFor(req.request_id)).toEqual([]);
    });

    it('exits at once when stopped while waiting to reconnect', async () => {
      await env.gateway.stop();
      const worker = startWorker();
      await new Promise<void>((resolve) => worker.daemon.once('reconnect_scheduled', () => resolve()));
      expect(await worker.daemon.stop()).toBe(0);
      expect(worker.daemon.status.state).toBe('stopped');
    });
  });

  it('never writes the worker secret or client credentials to its logs', async () => {
    env.backend.enqueue({ kind: 'status', status: 401, body: `{"error":"bad key Bearer client-key-abc"}` });
    const worker = startWorker();
    const conn = await env.gateway.connection(1);
    const req = requestFrame({ headers: { authorization: 'Bearer client-key-abc', 'x-worker-secret': SECRET } });
    conn.send(req);
    await conn.final(req.request_id);
    conn.send('garbage with the secret ' + SECRET);
    await env.gateway.connection(2);
    await worker.daemon.stop();
    const text = worker.rawLogs.join('');
    expect(worker.rawLogs.length).toBeGreaterThan(5);
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain('client-key-abc');
  });
});
