import { CloseReasons } from '../../src/protocol';
import { FakeGateway } from './support/fake-gateway';
import { SECRET, useWorkerHarness, within } from './support/harness';

/**
 * What the worker says and does when the gateway ends a connection: one specific log line per
 * close code and reason, success logged only once the gateway acknowledges, and a prompt,
 * penalty-free reconnect when the gateway announces a restart (1012).
 */
describe('worker daemon: gateway closes and restarts', () => {
  const { env, startWorker } = useWorkerHarness();

  const msgs = (logs: Array<Record<string, unknown>>) => logs.map((l) => String(l.msg));

  it('logs "connected" when the socket opens and "registered" (worker id, models) only once register_ack arrives', async () => {
    await env.gateway.stop();
    env.gateway = new FakeGateway({ secret: SECRET, autoAck: false });
    await env.gateway.start();
    const worker = startWorker({ models: ['llama3', 'qwen2.5'] });
    const conn = await env.gateway.connection(1);
    await conn.next('register'); // the worker logs before it sends

    expect(worker.logs).toContainEqual(expect.objectContaining({ level: 'info', msg: 'connected to gateway; registering' }));
    expect(msgs(worker.logs).some((m) => /registered/.test(m))).toBe(false);

    const registered = new Promise<void>((r) => worker.daemon.once('registered', () => r()));
    conn.send({ type: 'register_ack', worker_id: 'w-42', models: ['llama3', 'qwen2.5'] });
    await within(registered, 'the registered event');
    const line = worker.logs.find((l) => l.msg === 'registered with the gateway');
    expect(line).toMatchObject({ level: 'info', worker_id: 'w-42', models: ['llama3', 'qwen2.5'] });
    expect(msgs(worker.logs).indexOf('connected to gateway; registering')).toBeLessThan(msgs(worker.logs).indexOf('registered with the gateway'));
  });

  describe('one specific line per close', () => {
    it.each([
      [1008, CloseReasons.AUTH_FAILED, 'error', /^worker authentication failed/, /WORKER_SECRET.*provider name/],
      [
        1008,
        CloseReasons.AUTH_RATE_LIMITED,
        'error',
        /^worker authentication temporarily rate limited/,
        /another worker on this host.*your own secret may be fine/,
      ],
      [1002, CloseReasons.PROTOCOL_ERROR, 'error', /protocol error/, /protocol version mismatch/],
    ])('refused with %d "%s": %s line', async (code, reason, level, msg, hint) => {
      env.gateway.rejectWith = { code, reason };
      const worker = startWorker();
      await within(new Promise((r) => worker.daemon.once('disconnected', r)), 'the refusal');
      const line = worker.logs.find((l) => l.code === code);
      expect(line).toMatchObject({ level, reason });
      expect(String(line?.msg)).toMatch(msg);
      expect(String(line?.hint)).toMatch(hint);
      expect(msgs(worker.logs).some((m) => /registered/.test(m))).toBe(false);
    });

    it.each([
      [1000, CloseReasons.DRAIN_COMPLETE, 'info', /^drain complete/],
      [1000, CloseReasons.DRAIN_TIMED_OUT, 'warn', /^drain timed out/],
      [1000, CloseReasons.HEARTBEAT_TIMEOUT, 'warn', /^heartbeat timed out/],
      [1012, CloseReasons.GATEWAY_RESTARTING, 'info', /^gateway restarting/],
    ])('closed with %d "%s": %s line', async (code, reason, level, msg) => {
      const worker = startWorker();
      const conn = await env.gateway.connection(1);
      await conn.next('register');
      const disconnected = new Promise((r) => worker.daemon.once('disconnected', r));
      await conn.close(code, reason);
      await within(disconnected, 'the close');
      const line = worker.logs.find((l) => l.code === code);
      expect(line).toMatchObject({ level, reason });
      expect(String(line?.msg)).toMatch(msg);
    });
  });

  describe('gateway restart (1012)', () => {
    it('reconnects after the short restart delay with the backoff counter reset, then starts the normal backoff from its minimum again', async () => {
      const worker = startWorker({ reconnectMinMs: 100, reconnectMaxMs: 60_000 }, { random: () => 0, restartReconnectMs: 50, restartReconnectMaxMs: 150 });
      const scheduled: Array<{ delayMs: number; attempt: number }> = [];
      worker.daemon.on('reconnect_scheduled', (s) => scheduled.push(s));

      // Four refusals grow the normal backoff to 800 ms (100, 200, 400, 800).
      env.gateway.rejectWith = { code: 1008, reason: CloseReasons.AUTH_FAILED };
      await env.gateway.waitForAttempts(4);
      env.gateway.rejectWith = undefined;
      const conn = await env.gateway.connection(1);
      await conn.next('register');
      expect(scheduled.slice(0, 4).map((s) => s.delayMs)).toEqual([100, 200, 400, 800]);

      await conn.close(1012, CloseReasons.GATEWAY_RESTARTING);
      const back = await env.gateway.connection(2);
      await back.next('register');
      expect(scheduled[4]).toEqual({ delayMs: 50, attempt: 1 }); // not 1600 ms, attempt 5

      back.ws.terminate(); // an ordinary failure afterwards
      await env.gateway.connection(3);
      expect(scheduled[5]).toEqual({ delayMs: 100, attempt: 1 });
    });

    it('keeps retrying at the short interval while the gateway is down, and is back as soon as it listens again', async () => {
      const worker = startWorker({ reconnectMinMs: 20_000, reconnectMaxMs: 60_000 }, { restartReconnectMs: 50, restartReconnectMaxMs: 150 });
      const conn = await env.gateway.connection(1);
      await conn.next('register');
      const port = env.gateway.port;
      const scheduled: Array<{ delayMs: number; attempt: number }> = [];
      worker.daemon.on('reconnect_scheduled', (s) => scheduled.push(s));

      await conn.close(1012, CloseReasons.GATEWAY_RESTARTING);
      await env.gateway.stop();
      // With the normal backoff the next attempt would be 20 s away: these all come within the test.
      await within(
        new Promise<void>((resolve) => {
          const check = () => (scheduled.length >= 5 ? resolve() : worker.daemon.once('reconnect_scheduled', check));
          check();
        }),
        'five restart retries',
        10_000,
      );
      expect(scheduled.map((s) => s.attempt).slice(0, 5)).toEqual([1, 2, 3, 4, 5]);
      for (const s of scheduled) expect(s.delayMs).toBeLessThanOrEqual(150 * 1.25);
      expect(worker.logs).toContainEqual(expect.objectContaining({ msg: 'reconnecting to the restarting gateway' }));

      await env.gateway.start(port);
      const registered = new Promise<void>((r) => worker.daemon.once('registered', () => r()));
      const again = await env.gateway.connection(2);
      await again.next('register');
      await within(registered, 'registration after the restart');

      // Registered: the restart is over, an ordinary drop backs off normally again.
      const dropped = new Promise<{ delayMs: number }>((r) => worker.daemon.once('reconnect_scheduled', r));
      again.ws.terminate();
      expect((await within(dropped, 'the reconnect after a drop')).delayMs).toBeGreaterThanOrEqual(20_000);
    });

    it('a gateway still refusing with 1012 while it shuts down keeps the worker on the short interval', async () => {
      env.gateway.rejectWith = { code: 1012, reason: CloseReasons.GATEWAY_RESTARTING };
      const worker = startWorker({ reconnectMinMs: 20_000, reconnectMaxMs: 60_000 }, { restartReconnectMs: 50, restartReconnectMaxMs: 150 });
      await env.gateway.waitForAttempts(3);
      env.gateway.rejectWith = undefined;
      await (await env.gateway.connection(1)).next('register');
      expect(worker.logs.filter((l) => l.code === 1012).length).toBeGreaterThanOrEqual(3);
    });
  });
});
