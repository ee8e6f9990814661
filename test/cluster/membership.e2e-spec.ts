import Redis from 'ioredis';
import { CLUSTER_KEY_PREFIX } from '../../src/cluster';
import { parsePrometheusText } from '../observability/prometheus-text';
import { TEST_ADMIN_TOKEN, TestGateway } from '../support/gateway';
import { admin, chat, eventually, get, post } from '../support/http';
import { ScriptedWorker } from '../support/scripted-worker';
import { itWithLogs as it, withGatewayLogs } from './support/gateway-process';
import { describeWithPostgres } from './support/postgres';
import { REPLICA_SECRET as SECRET, Replicas, startReplicas } from './support/replicas';

/** Long enough that a heartbeat (a third of it) is well apart from the allowance below. */
const TIMEOUT_SECS = 3;
/** How late past the replica timeout a dead replica may still be counted (issue 18: "within replica_timeout_secs"). */
const ALLOWANCE_MS = 400;
/** Generous bounds: the tests wait for state, they never time it. */
const WAIT = 15_000;

async function members(gw: TestGateway): Promise<string[]> {
  const res = await admin(gw.url, 'GET', '/admin/cluster', TEST_ADMIN_TOKEN);
  expect(res.status).toBe(200);
  return (res.json.members as Array<{ id: string }>).map((m) => m.id);
}

async function gauge(gw: TestGateway, name: string): Promise<number | undefined> {
  return parsePrometheusText((await get(gw.url, '/metrics')).text).get(name)?.samples[0]?.value;
}

/** Each replica a real `node dist/main.js` process. */
describeWithPostgres('cluster mode: three replicas on one Redis and one PostgreSQL', () => {
  let replicas: Replicas;
  const gateways = new Map<string, TestGateway>();

  beforeAll(
    () =>
      withGatewayLogs(async () => {
        // Together, on an empty schema: the migration lock lets all three boot.
        const ids = ['gw-a', 'gw-b', 'gw-c'];
        replicas = await startReplicas('cluster', ids, { env: { CLUSTER_REPLICA_TIMEOUT_SECS: String(TIMEOUT_SECS) }, awaitMembers: false });
        for (const id of ids) gateways.set(id, replicas.get(id));
      }),
    120_000,
  );

  afterAll(() => replicas?.close());

  it('each replica lists all three on /admin/cluster, itself marked, and counts them on /health', async () => {
    for (const [id, gw] of gateways) {
      await eventually(async () => (await members(gw)).length === 3, WAIT, `${id} sees 3 replicas`);
      const res = await admin(gw.url, 'GET', '/admin/cluster', TEST_ADMIN_TOKEN);
      expect(res.json).toMatchObject({ enabled: true, replica_id: id, degraded: false, replica_timeout_secs: TIMEOUT_SECS });
      expect(res.json.members.map((m: { id: string }) => m.id).sort()).toEqual(['gw-a', 'gw-b', 'gw-c']);
      expect(res.json.members.filter((m: { self: boolean }) => m.self).map((m: { id: string }) => m.id)).toEqual([id]);
      expect(res.json.members[0].advertise_url).toBe(gw.url);
      expect(res.text).not.toContain(SECRET);
    }
    await eventually(async () => (await get(gateways.get('gw-a')!.url, '/health')).json.cluster?.members === 3, WAIT, '/health counts 3');
    expect((await get(gateways.get('gw-a')!.url, '/health')).json.cluster).toEqual({ replica_id: 'gw-a', members: 3, degraded: false });
    expect(await gauge(gateways.get('gw-a')!, 'switchboard_cluster_members')).toBe(3);
  });

  it('a stopped replica leaves at once and is gone for the others', async () => {
    const client = new Redis(replicas.redis.url);
    try {
      expect(await client.zscore(`${CLUSTER_KEY_PREFIX}members`, 'gw-c')).not.toBeNull();
      await gateways.get('gw-c')!.close();
      gateways.delete('gw-c');
      // It removed itself on the way out, before any timeout could have dropped it.
      expect(await client.zscore(`${CLUSTER_KEY_PREFIX}members`, 'gw-c')).toBeNull();
      expect(await client.hexists(`${CLUSTER_KEY_PREFIX}records`, 'gw-c')).toBe(0);
    } finally {
      client.disconnect();
    }
    for (const [id, gw] of gateways) {
      await eventually(async () => !(await members(gw)).includes('gw-c'), TIMEOUT_SECS * 1000 + WAIT, `${id} drops gw-c`);
    }
  });

  it('a replica that stops heartbeating without leaving (a crash) is gone for the others within the replica timeout', async () => {
    // A replica that announced itself once and died: its record is never refreshed again. Its last
    // heartbeat is placed just after one of gw-a's, so that its timeout ends right after another of
    // gw-a's heartbeats: a replica that only re-read the list at each heartbeat would keep it almost
    // one more heartbeat (timeout / 3). Redis runs on this host: its TIME and Date.now() are one clock.
    const client = new Redis(replicas.redis.url);
    const timeoutMs = TIMEOUT_SECS * 1000;
    let lastSeen: number;
    try {
      const beatOfA = async () => Number(await client.zscore(`${CLUSTER_KEY_PREFIX}members`, 'gw-a'));
      const before = await beatOfA();
      const beat = (await eventually(async () => ((await beatOfA()) !== before ? beatOfA() : undefined), WAIT, 'a heartbeat of gw-a'))!;
      lastSeen = beat + 100;
      await new Promise((r) => setTimeout(r, Math.max(0, lastSeen - Date.now())));
      const record = { id: 'gw-crashed', advertise_url: 'http://10.0.0.9:8080', started_at: lastSeen, version: '0.0.0' };
      await client
        .multi()
        .zadd(`${CLUSTER_KEY_PREFIX}members`, lastSeen, 'gw-crashed')
        .hset(`${CLUSTER_KEY_PREFIX}records`, 'gw-crashed', JSON.stringify(record))
        .exec();
    } finally {
      client.disconnect();
    }
    const counts = async () => Promise.all([...gateways.values()].map(async (gw) => (await get(gw.url, '/health')).json.cluster?.members as number));
    // Learnt at the next heartbeat; /health counts what each replica holds and never reads Redis itself.
    await eventually(async () => (await counts()).every((n) => n === gateways.size + 1), timeoutMs, 'both count gw-crashed');
    const gone = new Map<number, number>();
    await eventually(
      async () => {
        (await counts()).forEach((n, i) => n === gateways.size && !gone.has(i) && gone.set(i, Date.now()));
        return gone.size === gateways.size;
      },
      timeoutMs + WAIT,
      'both drop gw-crashed',
    );
    // Past the timeout by at most a poll and a timer's lateness on a loaded machine (a heartbeat is 1 s).
    for (const at of gone.values()) expect(at - (lastSeen + timeoutMs)).toBeLessThan(ALLOWANCE_MS);
    expect(await members(gateways.get('gw-a')!)).not.toContain('gw-crashed');
  });

  it('Redis lost: degraded on /health and the gauge, still ready and serving its own worker; Redis back: re-joined', async () => {
    const gw = gateways.get('gw-a')!;
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['local-model'] });
    await replicas.redis.stop();

    const health = (await eventually(
      async () => {
        const h = await get(gw.url, '/health');
        return h.json.cluster?.degraded === true ? h : undefined;
      },
      WAIT,
      'gw-a reports degraded',
    ))!;
    expect(health.status).toBe(200);
    expect(health.json.status).toBe('healthy');
    expect(health.json.cluster).toEqual({ replica_id: 'gw-a', members: 1, degraded: true });
    expect(await gauge(gw, 'switchboard_cluster_degraded')).toBe(1);
    expect((await get(gw.url, '/health/ready')).status).toBe(200);
    expect((await admin(gw.url, 'GET', '/admin/cluster', TEST_ADMIN_TOKEN)).json).toMatchObject({ degraded: true, members: [{ id: 'gw-a', self: true }] });

    const answer = post(gw.url, '/v1/chat/completions', chat('local-model'));
    const request = await worker.next('request');
    worker.complete(request.request_id, { choices: [{ message: { role: 'assistant', content: 'served alone' } }] });
    const res = await answer;
    expect(res.status).toBe(200);
    expect(res.json.choices[0].message.content).toBe('served alone');

    await replicas.redis.start();
    for (const [id, replica] of gateways) {
      await eventually(async () => (await get(replica.url, '/health')).json.cluster?.degraded === false, WAIT, `${id} re-joins`);
      await eventually(async () => (await members(replica)).length === 2, WAIT, `${id} sees both again`);
    }
    expect(await gauge(gw, 'switchboard_cluster_degraded')).toBe(0);
    worker.close();
  });
  it('Redis frozen (connections open, nothing answered): /admin/cluster still answers, degraded; thawed: re-joined', async () => {
    const gw = gateways.get('gw-b')!;
    replicas.redis.pause();
    try {
      // The admin read waits CLUSTER_REDIS_TIMEOUT_MS at most, then answers what this replica knows.
      const res = await admin(gw.url, 'GET', '/admin/cluster', TEST_ADMIN_TOKEN);
      expect(res.status).toBe(200);
      expect(res.json).toMatchObject({ replica_id: 'gw-b', degraded: true, members: [{ id: 'gw-b', self: true }] });
      expect((await get(gw.url, '/health/ready')).status).toBe(200);
    } finally {
      replicas.redis.resume();
    }
    await eventually(async () => (await get(gw.url, '/health')).json.cluster?.degraded === false, WAIT, 'gw-b re-joins');
    await eventually(async () => (await members(gw)).length === 2, WAIT, 'gw-b sees both again');
  });
});
