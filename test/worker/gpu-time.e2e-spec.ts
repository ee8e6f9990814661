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

  it("writes the GPU time into a stream's final usage (OpenAI and Anthropic), once gpu_time is accepted", async () => {
    env.gateway.ackFeatures = ['response_start', 'gpu_time'];
    startWorker();
    const conn = await env.gateway.connection(1);
    for (const path of ['/v1/chat/completions', '/v1/messages']) {
      const req = requestFrame({ stream: true, path });
      conn.send(req);
      const done = await conn.final(req.request_id);
      expect(done.status_code).toBe(200);
      const text = conn
        .framesFor(req.request_id)
        .filter((f) => f.type === 'response_chunk')
        .map((f) => f.chunk)
        .join('');
      const usages = text
        .split('\n')
        .filter((l: string) => l.startsWith('data: {'))
        .map((l: string) => JSON.parse(l.slice(6)))
        .map((e: any) => e.usage ?? e.message?.usage)
        .filter(Boolean);
      const last = usages[usages.length - 1];
      expect(Number.isInteger(last.gpu_time_ms)).toBe(true);
      expect(usages.slice(0, -1).every((u: any) => u.gpu_time_ms === undefined)).toBe(true);
    }
  });

  it('leaves stream bytes untouched for a gateway without gpu_time', async () => {
    env.gateway.ackFeatures = ['response_start'];
    startWorker();
    const conn = await env.gateway.connection(1);
    const req = requestFrame({ stream: true });
    conn.send(req);
    await conn.final(req.request_id);
    const text = conn
      .framesFor(req.request_id)
      .filter((f) => f.type === 'response_chunk')
      .map((f) => f.chunk)
      .join('');
    expect(text).not.toContain('gpu_time_ms');
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
