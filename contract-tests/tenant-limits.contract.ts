/**
 * Contract: per-tenant rate limits are exact across gateway replicas that share one Redis — two
 * separately spawned gateway processes hold one limit between them.
 */
import { randomUUID } from 'node:crypto';
import { spawnGateway, SpawnedGateway } from './support/server';
import { Scope } from './support/scope';
import { chatBody, uniqueModel } from './support/util';

const REDIS_URL = process.env.TEST_REDIS_URL || 'redis://127.0.0.1:6379';

describe('tenant limits shared through Redis (two gateway processes)', () => {
  const tenant = `contract-${randomUUID().slice(0, 8)}`;
  let gateways: SpawnedGateway[] = [];
  let scopes: Scope[] = [];

  beforeAll(async () => {
    const env = { REDIS_URL, [`TENANT_RATE_LIMIT_${tenant}`]: '10req/min' };
    gateways = [await spawnGateway({ label: 'redis-a', env }), await spawnGateway({ label: 'redis-b', env })];
    scopes = gateways.map((gw) => new Scope({ baseUrl: gw.url, wsUrl: gw.wsUrl, adminToken: gw.env.ADMIN_TOKEN }));
  });
  afterEach(async () => {
    for (const s of scopes) await s.cleanup();
  });
  afterAll(async () => {
    for (const gw of gateways) await gw.stop('SIGTERM');
  });

  test('rpm 10 with 40 parallel requests spread over both processes: exactly 10 are served', async () => {
    const model = uniqueModel('shared-limit');
    for (const [i, scope] of scopes.entries()) {
      const w = await scope.worker({ models: [model], max_concurrent: 40 }, { secret: gateways[i].env.WORKER_SECRET, provider: 'local' });
      w.ws.on('message', (data) => {
        const frame = JSON.parse(data.toString());
        if (frame.type === 'request') w.respondJson(frame.request_id, { ok: true });
      });
    }
    // Both processes must be on Redis before the burst (they connect in the background).
    for (const gw of gateways) {
      for (let t = 0; t < 100; t++) {
        const health = (await (await fetch(`${gw.url}/health`)).json()) as { redis?: { status: string } };
        if (health.redis?.status === 'ok') break;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) => scopes[i % 2].post('/v1/chat/completions', chatBody(model), { 'x-tenant-id': tenant }).done),
    );
    const served = results.filter((r) => r.status === 200).length;
    const limited = results.filter((r) => r.status === 429);
    expect(served).toBe(10);
    expect(limited).toHaveLength(30);
    expect(limited[0].json().error).toMatchObject({ code: 'rate_limit_exceeded', limit: 10, retriable: true });
  });
});
