import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { generateKey, hashKey } from '../../src/api-keys/api-key-material';
import { parsePrometheusText } from '../observability/prometheus-text';
import { TEST_ADMIN_TOKEN, TestGateway } from '../support/gateway';
import { admin, eventually, get } from '../support/http';
import { ScriptedWorker } from '../support/scripted-worker';
import { itWithLogs as it, withGatewayLogs } from './support/gateway-process';
import { describeWithPostgres, POSTGRES_URL } from './support/postgres';
import { Replicas, startReplicas } from './support/replicas';

/** Issue 18: a change made on one replica holds on all within 1 s of its HTTP answer. */
const PROPAGATE_MS = 1_000;
/** How long a change that missed that bound is still waited for, so that the failure shows how late it was. */
const LATE = 5_000;
/** Waiting for state that takes reconnections (Redis restarted). */
const WAIT = 20_000;

const call = (gw: TestGateway, method: string, path: string, body?: unknown) => admin(gw.url, method, path, TEST_ADMIN_TOKEN, body);

/** Makes a change through `gw`, expects `status`, and returns when its answer came (Date.now()). */
async function change(gw: TestGateway, method: string, path: string, status: number, body?: unknown): Promise<number> {
  const res = await call(gw, method, path, body);
  const answeredAt = Date.now();
  expect(res.status).toBe(status);
  return answeredAt;
}

/**
 * Polls `check` (every 20 ms) until it holds, then expects that to have been within PROPAGATE_MS of
 * `since`: the moment the answer of the check that held was received, so the measure errs late.
 */
async function propagated(since: number, check: () => Promise<boolean>, what: string): Promise<void> {
  await eventually(check, Math.max(0, since + PROPAGATE_MS + LATE - Date.now()), what);
  const after = Date.now() - since;
  if (after > PROPAGATE_MS) throw new Error(`${what} after ${after} ms (the bound is ${PROPAGATE_MS} ms)`);
}

/** `/v1/models` with a client key: 200 when the replica accepts the key. */
async function modelsWith(gw: TestGateway, key: string): Promise<number> {
  return (await get(gw.url, '/v1/models', { authorization: `Bearer ${key}` })).status;
}

async function failures(gw: TestGateway, reason: string): Promise<number> {
  const family = parsePrometheusText((await get(gw.url, '/metrics')).text).get('switchboard_client_auth_failures_total');
  return family?.samples.find((s) => s.labels.reason === reason)?.value ?? 0;
}

async function modelIds(gw: TestGateway): Promise<string[]> {
  return ((await get(gw.url, '/v1/models')).json.data as Array<{ id: string }>).map((m) => m.id);
}

/** Three replicas, each a real `node dist/main.js` process, on one Redis and one PostgreSQL schema. */
describeWithPostgres('cluster mode: configuration made on one replica holds on all (cluster bus)', () => {
  let replicas: Replicas;
  let dir: string;
  let configFile: string;
  let a: TestGateway;
  let b: TestGateway;
  let c: TestGateway;
  const workers: ScriptedWorker[] = [];
  let provider: string;

  /** SQL in the suite's schema (what another replica's write looks like, without a message). */
  const sql = async (text: string, params: unknown[] = []) => {
    const client = new Client({ connectionString: POSTGRES_URL });
    await client.connect();
    try {
      await client.query(`SET search_path TO "${replicas.schema.schema}"`);
      return await client.query(text, params);
    } finally {
      await client.end();
    }
  };

  const writeConfig = (aliases: Record<string, string>) =>
    writeFileSync(
      configFile,
      `routing:\n  aliases:\n${Object.entries(aliases)
        .map(([k, v]) => `    ${k}: ${v}\n`)
        .join('')}`,
    );

  const worker = async (gw: TestGateway, register: Parameters<typeof ScriptedWorker.register>[1], options?: Parameters<typeof ScriptedWorker.register>[2]) => {
    const w = await ScriptedWorker.register(gw.workerUrl, register, options);
    workers.push(w.worker);
    return w;
  };

  beforeAll(
    () =>
      withGatewayLogs(async () => {
        dir = mkdtempSync(join(tmpdir(), 'switchboard-broadcast-'));
        configFile = join(dir, 'switchboard.yaml');
        writeConfig({ 'alias-one': 'model-r' });
        // The gateway's own replica timeout (10 s), not the short one of the other suites.
        const env = { CONFIG_FILE: configFile, CLUSTER_REPLICA_TIMEOUT_SECS: '10' };
        replicas = await startReplicas('broadcast', ['gw-a', 'gw-b', 'gw-c'], { env, awaitMembers: false });
        [a, b, c] = replicas.gateways;
        provider = (await call(a, 'GET', '/admin/providers')).json.data[0].name;
      }),
    120_000,
  );

  afterEach(() => {
    for (const w of workers.splice(0)) w.close();
  });

  afterAll(async () => {
    try {
      await replicas?.close();
    } finally {
      if (dir) rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a key created on A works on B and C; revoked, restored and deleted on A, the others follow', async () => {
    const created = await call(a, 'POST', '/admin/keys', { name: 'k1', tenant: 'team-k' });
    expect(created.status).toBe(201);
    const { id, key } = created.json as { id: string; key: string };
    for (const gw of [b, c]) expect(await modelsWith(gw, key)).toBe(200);

    const revoked = await change(a, 'PATCH', `/admin/keys/${id}`, 200, { enabled: false });
    expect(await modelsWith(a, key)).toBe(401);
    for (const gw of [b, c]) await propagated(revoked, async () => (await modelsWith(gw, key)) === 401, 'revocation reaches the replica');
    expect((await call(b, 'GET', `/admin/keys/${id}`)).json.status).toBe('revoked');

    const restored = await change(a, 'PATCH', `/admin/keys/${id}`, 200, { enabled: true });
    for (const gw of [b, c]) await propagated(restored, async () => (await modelsWith(gw, key)) === 200, 'restoring reaches the replica');

    const deleted = await change(a, 'DELETE', `/admin/keys/${id}`, 200);
    for (const gw of [b, c]) {
      await propagated(deleted, async () => (await modelsWith(gw, key)) === 401, 'deletion reaches the replica');
      expect((await call(gw, 'GET', `/admin/keys/${id}`)).status).toBe(404);
    }
  });

  it('a key in PostgreSQL that no message announced is looked up once, accepted and not counted as a failed attempt', async () => {
    // Written as another replica would, but with no message on the bus: only the lookup can find it.
    const key = generateKey();
    const now = Date.now();
    await sql(
      `INSERT INTO api_keys (id, name, key_hash, prefix, tenant, enabled, source, priority, models, created_at) VALUES ($1, $2, $3, $4, $5, true, 'admin', NULL, NULL, $6)`,
      ['key_unannounced', 'unannounced', hashKey(key), key.slice(0, 11), 'team-u', now],
    );
    const before = await failures(b, 'invalid');
    expect(await modelsWith(b, key)).toBe(200);
    expect(await modelsWith(b, key)).toBe(200);
    expect((await call(b, 'GET', '/admin/keys/key_unannounced')).json.status).toBe('active');
    // A key that exists nowhere is still refused and counted.
    expect(await modelsWith(b, generateKey())).toBe(401);
    expect(await failures(b, 'invalid')).toBe(before + 1);
  });

  it('tenants stored and removed on A are applied on B', async () => {
    const stored = await change(a, 'PUT', '/admin/tenants/team-t', 200, { rpm: 7 });
    await propagated(stored, async () => (await call(b, 'GET', '/admin/tenants/team-t')).json.source === 'admin', 'tenant reaches B');
    expect((await call(b, 'GET', '/admin/tenants/team-t')).json.settings.rpm).toBe(7);
    const removed = await change(a, 'DELETE', '/admin/tenants/team-t', 200);
    await propagated(removed, async () => (await call(b, 'GET', '/admin/tenants/team-t')).json.source === 'default', 'removal reaches B');
  });

  it('a provider created, patched, disabled and deleted on A: B follows, and closes its worker when it is deleted', async () => {
    const secret = 'pool-x-secret-0123456789';
    const created = await change(a, 'POST', '/admin/providers', 201, { name: 'pool-x', secret });
    const onB = async () => ((await call(b, 'GET', '/admin/providers')).json.data as Array<Record<string, unknown>>).find((p) => p.name === 'pool-x');
    await propagated(created, async () => (await onB()) !== undefined, 'provider reaches B');
    // B knows its secret hash: a worker of the new pool registers there.
    const { worker: w } = await worker(b, { models: ['model-x'] }, { provider: 'pool-x', secret });

    const patched = await change(a, 'PATCH', '/admin/providers/pool-x', 200, { max_queue_len: 7 });
    await propagated(patched, async () => (await onB())?.max_queue_len === 7, 'patch reaches B');
    const disabled = await change(a, 'PATCH', '/admin/providers/pool-x', 200, { enabled: false });
    await propagated(disabled, async () => (await onB())?.enabled === false, 'disable reaches B');

    const deleted = await change(a, 'DELETE', '/admin/providers/pool-x', 200);
    await propagated(deleted, async () => (await onB()) === undefined, 'deletion reaches B');
    expect((await w.closed).code).toBe(1000);
  });

  it('a pool drained on A drains its worker connected to B; undrained on A, B lifts the cordon', async () => {
    const { worker: w } = await worker(b, { models: ['model-p'] });
    const drained = await change(a, 'POST', `/v1/pools/${provider}/drain`, 202, { deadline_ms: 5000, reason: 'maintenance' });
    await propagated(drained, async () => w.has('graceful_shutdown'), 'the drain reaches the worker on B');
    expect((await w.next('graceful_shutdown')).reason).toBe('maintenance');
    expect((await call(b, 'GET', `/v1/pools/${provider}/health`)).json.draining).toBe(true);
    const undrained = await change(a, 'POST', `/v1/pools/${provider}/undrain`, 200);
    await propagated(undrained, async () => (await call(b, 'GET', `/v1/pools/${provider}/health`)).json.draining === false, 'undrain reaches B');
  });

  it("a worker name drained on A drains that name's connection to B and is cordoned there; undrained on A, lifted there", async () => {
    const { worker: onA, ack } = await worker(a, { models: ['model-n'], worker_name: 'gpu-same' });
    const { worker: onB } = await worker(b, { models: ['model-n'], worker_name: 'gpu-same' });
    const drained = await change(a, 'POST', `/admin/workers/${ack.worker_id}/drain`, 202, { timeout_secs: 5, reason: 'swap' });
    expect((await onA.next('graceful_shutdown')).reason).toBe('swap');
    await propagated(drained, async () => onB.has('graceful_shutdown'), 'the drain reaches the connection to B');
    expect((await onB.next('graceful_shutdown')).reason).toBe('swap');
    const cordons = (await call(b, 'GET', '/admin/cordons')).json.workers as Array<{ name: string; worker_ids: string[] }>;
    expect(cordons).toEqual([expect.objectContaining({ name: 'gpu-same', worker_ids: expect.arrayContaining([ack.worker_id]) })]);
    const undrained = await change(a, 'POST', `/admin/workers/${ack.worker_id}/undrain`, 200);
    await propagated(undrained, async () => (await call(b, 'GET', '/admin/cordons')).json.workers.length === 0, 'undrain reaches B');
  });

  it("a worker connected only to B is drained through A by its id, and A's undrain lifts it on B", async () => {
    const { worker: far, ack } = await worker(b, { models: ['model-far'], worker_name: 'gpu-far' });
    // A sees B's worker in the shared fleet, then drains it by the id it lists.
    await eventually(async () => (await call(a, 'GET', `/admin/workers/${ack.worker_id}`)).status === 200, WAIT, 'A sees the worker of B');
    const drained = await change(a, 'POST', `/admin/workers/${ack.worker_id}/drain`, 202, { timeout_secs: 5, reason: 'far-swap' });
    await propagated(drained, async () => far.has('graceful_shutdown'), 'the drain reaches the worker on B');
    expect((await far.next('graceful_shutdown')).reason).toBe('far-swap');
    expect(((await call(b, 'GET', '/admin/cordons')).json.workers as Array<{ name: string }>).map((c) => c.name)).toEqual(['gpu-far']);
    const undrained = await change(a, 'POST', `/admin/workers/${ack.worker_id}/undrain`, 200);
    await propagated(undrained, async () => (await call(b, 'GET', '/admin/cordons')).json.workers.length === 0, 'undrain reaches B');
  });

  it('POST /admin/reload on A reloads B and C (each from its own file)', async () => {
    await worker(b, { models: ['model-r'] });
    await worker(c, { models: ['model-r'] });
    await eventually(async () => (await modelIds(b)).includes('alias-one'), WAIT, 'B lists the first alias');
    writeConfig({ 'alias-two': 'model-r' });
    const reloaded = await change(a, 'POST', '/admin/reload', 200);
    for (const gw of [b, c]) {
      await propagated(reloaded, async () => (await modelIds(gw)).includes('alias-two'), 'the replica reloaded');
      expect(await modelIds(gw)).not.toContain('alias-one');
    }
  });

  it('Redis restarted: a change made through A while it was down, and one made behind every replica (no message), hold on B and C once it is back', async () => {
    const created = await call(a, 'POST', '/admin/keys', { name: 'k-resync', tenant: 'team-r' });
    const { id, key } = created.json as { id: string; key: string };
    const stored = await change(a, 'PUT', '/admin/tenants/team-r', 200, { rpm: 3 });
    await propagated(stored, async () => (await call(b, 'GET', '/admin/tenants/team-r')).json.source === 'admin', 'tenant reaches B');
    expect(await modelsWith(b, key)).toBe(200);

    await replicas.redis.stop();
    // Through A while the bus is down: A keeps the message and sends it once Redis is back (the resync would also find it).
    expect((await call(a, 'DELETE', '/admin/tenants/team-r')).status).toBe(200);
    // Behind every replica's back (no message at all): only the resync finds it.
    await sql('UPDATE api_keys SET enabled = false, revoked_at = $2 WHERE id = $1', [id, Date.now()]);
    expect(await modelsWith(b, key)).toBe(200); // B still holds the key as it was
    await replicas.redis.start();

    for (const gw of [b, c]) {
      await eventually(async () => (await modelsWith(gw, key)) === 401, WAIT, 'the replica re-read the keys');
      await eventually(async () => (await call(gw, 'GET', '/admin/tenants/team-r')).json.source === 'default', WAIT, 'the kept message arrives');
    }
  });
});
