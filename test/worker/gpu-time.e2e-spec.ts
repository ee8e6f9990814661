import { requestFrame, useWorkerHarness } from './support/harness';

/** Issue 22: `gpu_time_ms` in response_complete is a negotiated field (feature `gpu_time`). */
describe('worker daemon: gpu_time_ms', () => {
  const { env, startWorker } = useWorkerHarness();

  it('asks for gpu_time and, once accepted, reports the backend call time in response_complete', async () => {
    env.gateway.ackFeatures = ['response_start', 'cancel_reasons', 'gpu_time'];
    env.backend.enqueue({ kind: 'slow', delayMs: 120 });
    startWorker();
    const conn = await env.gateway.connection(1);
    expect((await conn.next('register')).features).toContain('gpu_time');
    const req = requestFrame();
    conn.send(req);
    const done = await conn.final(req.request_id);
    expect(done.status_code).toBe(200);
    expect(Number.isInteger(done.gpu_time_ms)).toBe(true);
    expect(done.gpu_time_ms).toBeGreaterThanOrEqual(100);
  });

  it('never sends gpu_time_ms to a gateway that did not accept the feature', async () => {
    env.gateway.ackFeatures = ['response_start', 'cancel_reasons'];
    startWorker();
    const conn = await env.gateway.connection(1);
    const req = requestFrame();
    conn.send(req);
    const done = await conn.final(req.request_id);
    expect(done.status_code).toBe(200);
    expect(done).not.toHaveProperty('gpu_time_ms');
  });
});
