import { CloseReasons } from '../../src/protocol';
import { useWorkerHarness, within } from './support/harness';

/**
 * A gateway refusing the worker with 1013 "try again later" (its pool or name is cordoned by an
 * operator): one clear log line, then a long, capped, jittered wait instead of a reconnect loop.
 */
describe('worker daemon: refused as cordoned (1013)', () => {
  const { env, startWorker } = useWorkerHarness();

  const nextSchedule = (daemon: ReturnType<typeof startWorker>['daemon']) =>
    within(new Promise<{ delayMs: number; attempt: number }>((r) => daemon.once('reconnect_scheduled', r)), 'a reconnect to be scheduled');

  it('logs why and what lifts it, waits 30-60 s (jitter) and does not retry meanwhile', async () => {
    env.gateway.rejectWith = { code: 1013, reason: CloseReasons.CORDONED };
    const worker = startWorker({ reconnectMinMs: 20, reconnectMaxMs: 40 }, { random: () => 0 });
    const scheduled = await nextSchedule(worker.daemon);
    expect(scheduled).toEqual({ delayMs: 30_000, attempt: 1 });

    const line = worker.logs.find((l) => l.code === 1013);
    expect(line).toMatchObject({ level: 'warn', reason: CloseReasons.CORDONED });
    expect(String(line?.msg)).toMatch(/^gateway refused this worker: it is cordoned/);
    expect(String(line?.hint)).toMatch(/undrain/);
    expect(worker.logs).toContainEqual(
      expect.objectContaining({ level: 'warn', msg: 'waiting for an operator to lift the cordon before reconnecting', delay_ms: 30_000, attempt: 1 }),
    );
    expect(worker.daemon.status.state).toBe('waiting_to_reconnect');

    // The normal backoff would have retried many times by now (20-40 ms): one attempt only.
    const before = env.gateway.attempts.length;
    await new Promise((r) => setTimeout(r, 400));
    expect(before).toBe(1);
    expect(env.gateway.attempts.length).toBe(1);
  });

  it('the wait is capped: the largest jitter gives the maximum, never more', async () => {
    env.gateway.rejectWith = { code: 1013, reason: CloseReasons.CORDONED };
    const worker = startWorker({}, { random: () => 1 });
    expect(await nextSchedule(worker.daemon)).toEqual({ delayMs: 60_000, attempt: 1 });
  });

  it('retries once per interval while cordoned, registers once the cordon is lifted, and then backs off normally again', async () => {
    env.gateway.rejectWith = { code: 1013, reason: CloseReasons.CORDONED };
    const worker = startWorker({ reconnectMinMs: 20, reconnectMaxMs: 40 }, { cordonRetryMs: 100, cordonRetryMaxMs: 150, random: () => 0 });
    const scheduled: Array<{ delayMs: number; attempt: number }> = [];
    worker.daemon.on('reconnect_scheduled', (s) => scheduled.push(s));
    await env.gateway.waitForAttempts(2);
    env.gateway.rejectWith = undefined;
    const registered = new Promise<void>((r) => worker.daemon.once('registered', () => r()));
    const conn = await env.gateway.connection(1);
    await conn.next('register');
    await within(registered, 'registration after the cordon');
    expect(scheduled.slice(0, 2)).toEqual([
      { delayMs: 100, attempt: 1 },
      { delayMs: 100, attempt: 2 },
    ]);

    // An ordinary drop afterwards uses the normal backoff from its minimum.
    const dropped = nextSchedule(worker.daemon);
    conn.ws.terminate();
    expect(await dropped).toEqual({ delayMs: 20, attempt: 1 });
  });

  it('stop() while waiting out a cordon exits at once', async () => {
    env.gateway.rejectWith = { code: 1013, reason: CloseReasons.CORDONED };
    const worker = startWorker();
    await nextSchedule(worker.daemon);
    expect(await within(worker.daemon.stop(), 'the daemon to stop')).toBe(0);
  });
});
