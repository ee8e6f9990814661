import { createServer } from 'node:net';
import { TestRedisServer } from '../rate-limit/support';
import { startGateway, TEST_ADMIN_TOKEN, TestGateway } from '../support/gateway';
import { admin, chat, eventually, get, post } from '../support/http';
import { ScriptedWorker } from '../support/scripted-worker';
import { CLUSTER_AUTH_HEADER } from '../../src/cluster/internal-link';
import { describeWithPostgres, freshSchema, FreshSchema } from './support/postgres';

const SECRET = 'cluster-secret-0123456789abcdef0123';

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** CLUSTER_LISTEN_ADDR: the internal routes move to a listener of their own, off the public port. */
describeWithPostgres('cluster mode: the internal listener (CLUSTER_LISTEN_ADDR)', () => {
  let redis: TestRedisServer;
  let schema: FreshSchema;
  const gw: TestGateway[] = [];
  const ports: number[] = [];
  let worker: ScriptedWorker;

  beforeAll(async () => {
    redis = await TestRedisServer.start();
    schema = await freshSchema('internal_listener');
    for (const id of ['a', 'b']) {
      const port = await freePort();
      ports.push(port);
      gw.push(
        await startGateway({
          DATABASE_URL: schema.url,
          CLUSTER_REDIS_URL: redis.url,
          CLUSTER_SECRET: SECRET,
          CLUSTER_REPLICA_ID: `gw-${id}`,
          CLUSTER_REPLICA_TIMEOUT_SECS: '1.5',
          CLUSTER_LISTEN_ADDR: `127.0.0.1:${port}`,
        }),
      );
    }
    worker = (await ScriptedWorker.register(gw[0].workerUrl, { models: ['inner-model'], worker_name: 'inner' })).worker;
    await eventually(
      async () => ((await get(gw[1].url, '/v1/models')).json?.data ?? []).some((m: { id: string }) => m.id === 'inner-model'),
      15_000,
      'b sees the worker',
    );
  }, 120_000);

  afterAll(async () => {
    worker?.close();
    for (const g of gw) await g.close();
    await redis?.stop();
    await schema?.drop();
  });

  it('replicas advertise the internal address and forward through it', async () => {
    const members = (await admin(gw[1].url, 'GET', '/admin/cluster', TEST_ADMIN_TOKEN)).json.members as Array<{ id: string; advertise_url: string }>;
    expect(members.find((m) => m.id === 'gw-a')!.advertise_url).toBe(`http://127.0.0.1:${ports[0]}`);
    const pending = post(gw[1].url, '/v1/chat/completions', chat('inner-model'));
    const req = await worker.next('request');
    worker.complete(req.request_id, { via: 'internal' });
    const res = await pending;
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ via: 'internal' });
  });

  it('the public listener no longer answers the internal routes, and the internal one answers nothing else', async () => {
    const onPublic = await post(gw[0].url, '/internal/cluster/v1/workers/x/requests', '{}\n', { [CLUSTER_AUTH_HEADER]: SECRET });
    expect(onPublic.status).toBe(404);
    const internalUrl = `http://127.0.0.1:${ports[0]}`;
    expect((await get(internalUrl, '/v1/models')).status).toBe(404);
    expect((await get(internalUrl, '/health')).status).toBe(404);
    // On the internal listener the route is there: without the secret it says so.
    expect((await post(internalUrl, '/internal/cluster/v1/workers/x/requests', '{}\n')).status).toBe(401);
    expect((await post(internalUrl, '/internal/cluster/v1/workers/x/requests', '{}\n', { [CLUSTER_AUTH_HEADER]: SECRET })).status).toBe(400);
  });
});
