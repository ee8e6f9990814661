import { startGateway, TestGateway } from '../support/gateway';
import { chat, eventually, post, RawResponse, sleep } from '../support/http';
import { ScriptedWorker } from '../support/scripted-worker';
import { adminCall, chatCompletion, createKey } from './support';
import { chatDelta, chatTask, finish, getJson, submit } from '../tasks/support';

/**
 * A worker that answers every request after `delayMs` and records, per `user` of the body, how
 * many of its requests it held at once (the gateway strips the API key; the body is byte-for-byte).
 */
function countingWorker(worker: ScriptedWorker, delayMs: (user: string) => number) {
  const now = new Map<string, number>();
  const peak = new Map<string, number>();
  const served: string[] = [];
  worker.ws.on('message', (data) => {
    const frame = JSON.parse(data.toString());
    if (frame.type !== 'request') return;
    const user = JSON.parse(frame.body).user as string;
    const n = (now.get(user) ?? 0) + 1;
    now.set(user, n);
    peak.set(user, Math.max(peak.get(user) ?? 0, n));
    setTimeout(() => {
      now.set(user, now.get(user)! - 1);
      served.push(user);
      worker.complete(frame.request_id, chatCompletion('m1'));
    }, delayMs(user));
  });
  return { now, peak, served };
}

describe('max_concurrent on keys and tenants (real ports, a WebSocket worker)', () => {
  let gw: TestGateway;
  let worker: ScriptedWorker;
  let counts: ReturnType<typeof countingWorker>;
  beforeAll(async () => {
    gw = await startGateway({ REQUIRE_API_KEYS: 'true', MAX_QUEUE_LEN: '1000', QUEUE_TIMEOUT_SECS: '60' });
    ({ worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['m1'], max_concurrent: 64 }));
    counts = countingWorker(worker, (user) => (user === 'team-t' ? 300 : 30));
  });
  afterAll(async () => {
    worker.close();
    await gw.close();
  });

  const ask = (key: string, user: string) => post(gw.url, '/v1/chat/completions', chat('m1', { user }), { authorization: `Bearer ${key}` });

  it("holds a key's max_concurrent exactly under 100 parallel requests, none refused, while another key's requests pass", async () => {
    const capped = await createKey(gw, { name: 'batch', tenant: 'team-c', max_concurrent: 3 });
    expect(capped.max_concurrent).toBe(3);
    const other = await createKey(gw, { name: 'interactive', tenant: 'team-c' });
    const batch = Array.from({ length: 100 }, () => ask(capped.key, 'batch'));
    await sleep(50); // the batch fills the queue first
    const interactive = await Promise.all(Array.from({ length: 5 }, () => ask(other.key, 'interactive')));
    const batchServedMeanwhile = counts.served.filter((u) => u === 'batch').length;
    const results: RawResponse[] = await Promise.all(batch);
    expect(results.map((r) => r.status)).toEqual(Array(100).fill(200));
    expect(interactive.map((r) => r.status)).toEqual(Array(5).fill(200));
    expect(counts.peak.get('batch')).toBe(3);
    // The other key never waited behind the batch (100 × 30 ms / 3 ≈ 1 s of batch work): its
    // requests were all answered while most of the batch still waited.
    expect(batchServedMeanwhile).toBeLessThan(80);
    expect(counts.served.lastIndexOf('interactive')).toBeLessThan(counts.served.lastIndexOf('batch'));
    expect(results[0].headers.get('x-concurrency-limit')).toBe('3');
    const inFlight = results.map((r) => Number(r.headers.get('x-concurrency-in-flight')));
    expect(Math.max(...inFlight)).toBe(3);
    expect(Math.min(...inFlight)).toBeGreaterThanOrEqual(1);
    expect(interactive[0].headers.get('x-concurrency-limit')).toBeNull();
  });

  it("a key's max_concurrent holds for its tasks too: a batch of tasks never has more than its cap on workers", async () => {
    const { worker: taskWorker } = await ScriptedWorker.register(gw.workerUrl, { models: ['tk'], max_concurrent: 16 });
    let running = 0;
    let peak = 0;
    taskWorker.ws.on('message', (data) => {
      const frame = JSON.parse(data.toString());
      if (frame.type !== 'request') return;
      running++;
      peak = Math.max(peak, running);
      setTimeout(() => {
        running--;
        taskWorker.chunk(frame.request_id, chatDelta('done'));
        finish(taskWorker, frame.request_id);
      }, 150);
    });
    const capped = await createKey(gw, { name: 'tasks', tenant: 'team-k', max_concurrent: 2 });
    const auth = { authorization: `Bearer ${capped.key}` };
    const accepted = await Promise.all(Array.from({ length: 6 }, () => submit(gw, chatTask('tk'), auth)));
    expect(accepted.map((r) => r.status)).toEqual(Array(6).fill(202));
    for (const a of accepted) {
      await eventually(async () => (await getJson(gw, `/v1/tasks/${a.json.task_id}`, auth)).json.status === 'completed', 10_000, 'task completed');
    }
    expect(peak).toBe(2);
    taskWorker.close();
  });

  it("a tenant's max_concurrent counts every key of the tenant; max_queued still bounds the wait; /admin/usage shows it live", async () => {
    expect((await adminCall(gw, 'PUT', '/admin/tenants/team-t', { max_concurrent: 2, max_queued: 3 })).json.settings).toMatchObject({
      max_concurrent: 2,
      max_queued: 3,
    });
    const a = await createKey(gw, { name: 'a', tenant: 'team-t' });
    const b = await createKey(gw, { name: 'b', tenant: 'team-t' });
    const pending = [ask(a.key, 'team-t'), ask(b.key, 'team-t'), ask(a.key, 'team-t'), ask(b.key, 'team-t'), ask(a.key, 'team-t')];
    const live = () => adminCall(gw, 'GET', '/admin/usage?tenant=team-t').then((r) => r.json.concurrency[0]);
    await eventually(async () => (await live())?.waiting === 3, 3000, '2 on the worker and 3 waiting');
    const refused = await ask(b.key, 'team-t'); // the tenant's queue share is full
    expect(refused.status).toBe(429);
    expect(refused.json.error.code).toBe('queue_full');
    const usage = await adminCall(gw, 'GET', '/admin/usage?tenant=team-t');
    expect(usage.status).toBe(200);
    expect(usage.json.concurrency).toEqual([{ scope: 'tenant', id: 'team-t', tenant: 'team-t', limit: 2, in_flight: 2, waiting: 3 }]);
    expect((await Promise.all(pending)).map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(counts.peak.get('team-t')).toBe(2);
    const after = await adminCall(gw, 'GET', '/admin/usage?tenant=team-t');
    expect(after.json.concurrency).toEqual([{ scope: 'tenant', id: 'team-t', tenant: 'team-t', limit: 2, in_flight: 0, waiting: 0 }]);
  });

  it('validates max_concurrent in the admin API (an integer >= 1, null clears it)', async () => {
    const bad = await adminCall(gw, 'POST', '/admin/keys', { name: 'zero', tenant: 'team-v', max_concurrent: 0 });
    expect(bad.status).toBe(400);
    expect(bad.json.error.message).toContain('max_concurrent must be an integer >= 1');
    const key = await createKey(gw, { name: 'cap', tenant: 'team-v', max_concurrent: 2 });
    const cleared = await adminCall(gw, 'PATCH', `/admin/keys/${key.id}`, { max_concurrent: null });
    expect(cleared.json.max_concurrent).toBeNull();
    expect((await adminCall(gw, 'PUT', '/admin/tenants/team-v', { max_concurrent: 0 })).status).toBe(400);
  });
});
