import { randomUUID } from 'node:crypto';
import { startGateway, TestGateway } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { chat, eventually, post } from '../support/http';
import { autoRespond } from '../support/routing';
import { SHARED_REDIS_URL, TestRedisServer } from '../rate-limit/support';

/** Limits shared through Redis by several gateway replicas, and what happens when Redis goes away. */
describe('tenant limits through Redis', () => {
  it('two gateways sharing one Redis hold one limit exactly (rpm 10, 40 parallel requests split across both)', async () => {
    const tenant = `shared-${randomUUID().slice(0, 8)}`;
    const env = { REDIS_URL: SHARED_REDIS_URL, [`TENANT_RATE_LIMIT_${tenant}`]: '10req/min', MAX_QUEUE_LEN: '100' };
    const [a, b] = [await startGateway(env), await startGateway(env)];
    try {
      for (const gw of [a, b]) {
        await eventually(async () => ((await (await fetch(`${gw.url}/health`)).json()) as any).redis?.status === 'ok');
        const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['shared-model'], max_concurrent: 50 });
        autoRespond(worker);
      }
      const results = await Promise.all(
        Array.from({ length: 40 }, (_, i) => post((i % 2 ? a : b).url, '/v1/chat/completions', chat('shared-model'), { 'x-tenant-id': tenant })),
      );
      expect(results.filter((r) => r.status === 200)).toHaveLength(10);
      expect(results.filter((r) => r.status === 429)).toHaveLength(30);
      expect(new Set(results.filter((r) => r.status === 429).map((r) => r.json.error.code))).toEqual(new Set(['rate_limit_exceeded']));
    } finally {
      await a.close();
      await b.close();
    }
  });

  describe('Redis stopped mid-run', () => {
    let redis: TestRedisServer;
    let gw: TestGateway;
    const tenant = `solo-${randomUUID().slice(0, 8)}`;
    beforeAll(async () => {
      redis = await TestRedisServer.start();
      gw = await startGateway({ REDIS_URL: redis.url, [`TENANT_RATE_LIMIT_${tenant}`]: '3req/min' });
      await eventually(async () => ((await (await fetch(`${gw.url}/health`)).json()) as any).redis?.status === 'ok');
      const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['solo-model'], max_concurrent: 20 });
      autoRespond(worker);
    });
    afterAll(async () => {
      await gw.close();
      await redis.stop();
    });

    it('keeps serving and limiting locally, shows it in /health, and returns to Redis after a restart', async () => {
      await redis.stop();
      const during = await Promise.all(Array.from({ length: 6 }, () => post(gw.url, '/v1/chat/completions', chat('solo-model'), { 'x-tenant-id': tenant })));
      expect(during.filter((r) => r.status === 200)).toHaveLength(3);
      expect(during.filter((r) => r.status === 429)).toHaveLength(3);
      const health: any = await (await fetch(`${gw.url}/health`)).json();
      expect(health.redis.status).toBe('down');
      expect((await fetch(`${gw.url}/health/ready`)).status).toBe(200);
      await redis.start();
      await eventually(async () => ((await (await fetch(`${gw.url}/health`)).json()) as any).redis?.status === 'ok', 15_000);
      // Back on Redis: a fresh (empty) Redis has the tenant's whole minute again.
      const after = await Promise.all(Array.from({ length: 4 }, () => post(gw.url, '/v1/chat/completions', chat('solo-model'), { 'x-tenant-id': tenant })));
      expect(after.filter((r) => r.status === 200)).toHaveLength(3);
    });
  });
});
