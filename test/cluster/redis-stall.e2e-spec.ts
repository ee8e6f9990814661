import { TEST_ADMIN_TOKEN, TestGateway } from '../support/gateway';
import { admin, chat, eventually, get, post, sleep } from '../support/http';
import { ScriptedWorker } from '../support/scripted-worker';
import { itWithLogs as it, withGatewayLogs } from './support/gateway-process';
import { describeWithPostgres } from './support/postgres';
import { Replicas, startReplicas } from './support/replicas';

/** CLUSTER_REDIS_TIMEOUT_MS of the replicas (the default, set so the bound below reads it). */
const REDIS_TIMEOUT_MS = 200;
/** What the rest of a request may take on a loaded 2-core machine, over the Redis timeout. */
const REST_OF_REQUEST_MS = 1_000;
/** The stall: several heartbeats (replica timeout 1.5 s, one every 500 ms) and rate-limit probes. */
const STALL_MS = 2_500;
const WAIT = 15_000;

interface Sent {
  startedAt: number;
  endedAt: number;
  status: number;
}

/**
 * Issue 18: "never makes a request wait on Redis beyond cluster.redis_timeout_ms". The suite's own
 * redis-server is frozen (SIGSTOP: connections stay open, nothing is answered, the worst case for a
 * client) while requests flow to a replica whose own worker serves them, with a client key of a
 * rate-limited tenant (the limiter shares that Redis), then thawed (SIGCONT).
 */
describeWithPostgres('cluster mode: a frozen Redis never holds a request beyond CLUSTER_REDIS_TIMEOUT_MS', () => {
  let replicas: Replicas;
  let a: TestGateway;
  let b: TestGateway;
  let worker: ScriptedWorker | undefined;

  beforeAll(
    () =>
      withGatewayLogs(async () => {
        replicas = await startReplicas('stall', ['gw-a', 'gw-b'], { env: { CLUSTER_REDIS_TIMEOUT_MS: String(REDIS_TIMEOUT_MS) } });
        [a, b] = replicas.gateways;
      }),
    120_000,
  );

  afterAll(async () => {
    worker?.close();
    await replicas?.close();
  });

  it('each request served while Redis is frozen ends within the Redis timeout plus the rest of the request, none fails; thawed, both re-join', async () => {
    ({ worker } = await ScriptedWorker.register(a.workerUrl, { models: ['stall-model'], max_concurrent: 8 }));
    const w = worker;
    // The worker answers every request at once: whatever a request waits for is the gateway's.
    w.ws.on('message', (data) => {
      const f = JSON.parse(String(data)) as { type: string; request_id: string };
      if (f.type === 'request') w.complete(f.request_id, { choices: [{ message: { role: 'assistant', content: 'ok' } }] });
    });
    expect((await admin(a.url, 'PUT', '/admin/tenants/team-stall', TEST_ADMIN_TOKEN, { rpm: 100_000 })).status).toBe(200);
    const created = await admin(a.url, 'POST', '/admin/keys', TEST_ADMIN_TOKEN, { name: 'stall', tenant: 'team-stall' });
    expect(created.status).toBe(201);
    const auth = { authorization: `Bearer ${created.json.key as string}` };
    expect((await post(a.url, '/v1/chat/completions', chat('stall-model'), auth)).status).toBe(200);

    const sent: Sent[] = [];
    let flowing = true;
    // Three clients, each sending its next request as soon as the last is answered.
    const client = async () => {
      while (flowing) {
        const startedAt = Date.now();
        const res = await post(a.url, '/v1/chat/completions', chat('stall-model'), auth);
        sent.push({ startedAt, endedAt: Date.now(), status: res.status });
      }
    };
    const clients = [client(), client(), client()];
    let stalledAt = 0;
    let thawedAt = 0;
    try {
      await sleep(300);
      stalledAt = Date.now();
      replicas.redis.pause();
      try {
        // The stall is real: the replica notices it (degraded) while it lasts.
        await eventually(async () => (await get(a.url, '/health')).json.cluster?.degraded === true, STALL_MS, 'gw-a degraded while Redis is frozen');
        await sleep(Math.max(0, stalledAt + STALL_MS - Date.now()));
      } finally {
        replicas.redis.resume();
        thawedAt = Date.now();
      }
      await sleep(500);
    } finally {
      flowing = false;
      await Promise.all(clients);
    }

    const during = sent.filter((s) => s.endedAt >= stalledAt && s.startedAt <= thawedAt);
    expect(during.length).toBeGreaterThan(3);
    // A healthy local worker served every one of them: nothing failed.
    expect(sent.filter((s) => s.status !== 200)).toEqual([]);
    const slowest = Math.max(...sent.map((s) => s.endedAt - s.startedAt));
    expect(slowest).toBeLessThanOrEqual(REDIS_TIMEOUT_MS + REST_OF_REQUEST_MS);

    // Thawed: both re-join without a restart and list each other again.
    for (const gw of [a, b]) {
      await eventually(async () => (await get(gw.url, '/health')).json.cluster?.degraded === false, WAIT, `${gw.url} re-joins`);
      await eventually(async () => (await get(gw.url, '/health')).json.cluster?.members === 2, WAIT, `${gw.url} lists both again`);
    }
  });
});
