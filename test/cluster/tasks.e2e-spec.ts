import Redis from 'ioredis';
import { TASK_KEY_PREFIX } from '../../src/tasks/task-cluster-redis';
import { TEST_ADMIN_TOKEN, TestGateway } from '../support/gateway';
import { admin, eventually } from '../support/http';
import { ScriptedWorker } from '../support/scripted-worker';
import { cancel, chatDelta, chatTask, finish, getJson, readStream, submit, TaskEvent, TaskStream } from '../tasks/support';
import { itWithLogs as it, withGatewayLogs } from './support/gateway-process';
import { describeWithPostgres } from './support/postgres';
import { REPLICA_SECRET as SECRET, Replicas, startReplicas } from './support/replicas';

/** Generous bounds: the tests wait for state, they never time it. */
const WAIT = 15_000;

const tokens = (events: TaskEvent[]) => events.filter((e) => e.event === 'token').map((e) => e.data.t as string);

/** Three replicas, each a real `node dist/main.js` process (gw-c is stopped and started again), on one Redis and one PostgreSQL schema. */
describeWithPostgres('cluster mode: tasks across replicas', () => {
  let replicas: Replicas;
  let a: TestGateway;
  let b: TestGateway;
  let c: TestGateway;
  const workers: ScriptedWorker[] = [];

  const worker = async (gw: TestGateway, model: string) => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: [model] });
    workers.push(worker);
    return worker;
  };

  beforeAll(
    () =>
      withGatewayLogs(async () => {
        replicas = await startReplicas('cluster_tasks', ['gw-a', 'gw-b', 'gw-c'], { env: { TASKS_MAX_READERS: '2' } });
        [a, b, c] = replicas.gateways;
      }),
    120_000,
  );

  afterAll(async () => {
    for (const w of workers) w.close();
    await replicas?.close();
  });

  it('a task submitted through A is read through B and C, streamed through B, resumed through C and cancelled through C', async () => {
    const onA = await worker(a, 'x-model');
    const accepted = await submit(a, chatTask('x-model', { task_id: 'across-1' }));
    expect(accepted.status).toBe(202);
    const req = await onA.next('request');

    for (const gw of [b, c]) {
      const status = await getJson(gw, '/v1/tasks/across-1');
      expect(status.status).toBe(200);
      expect(status.json).toMatchObject({
        task_id: 'across-1',
        status: 'running',
        model: 'x-model',
        pool_id: 'local',
        stream_url: '/v1/tasks/across-1/stream',
      });
    }
    // Ownership holds as on the owner: another tenant's reader gets the 404 of a task that does not exist.
    const foreign = await getJson(b, '/v1/tasks/across-1', { 'x-tenant-id': 'someone-else' });
    const missing = await getJson(a, '/v1/tasks/no-such-task');
    expect(foreign.status).toBe(404);
    expect(missing.status).toBe(404);
    expect(foreign.json.error.code).toBe(missing.json.error.code);
    expect(foreign.json.error.message).toBe("Task 'across-1' not found");
    expect((await readStream(c, 'across-1', { 'x-tenant-id': 'someone-else' })).status).toBe(404);
    expect((await cancel(b, 'across-1', { 'x-tenant-id': 'someone-else' })).status).toBe(404);
    // The internal route the relays use answers only with the cluster secret, and checks the tenant it is given.
    const internal = `${a.url}/internal/cluster/v1/tasks/across-1`;
    expect((await fetch(internal, { headers: { 'x-switchboard-task-tenant': 'default' } })).status).toBe(401);
    const secret = { 'x-switchboard-cluster-auth': SECRET };
    expect((await fetch(internal, { headers: { ...secret, 'x-switchboard-task-tenant': 'someone-else' } })).status).toBe(404);
    expect((await fetch(internal, { headers: secret })).status).toBe(400);
    expect(await (await fetch(internal, { headers: { ...secret, 'x-switchboard-task-tenant': 'default' } })).json()).toMatchObject({ task_id: 'across-1' });
    // The id is the tenant's across the cluster: submitting it again through another replica is a 409.
    const again = await submit(b, chatTask('x-model', { task_id: 'across-1' }));
    expect(again.status).toBe(409);
    expect(again.json.error).toMatchObject({ code: 'conflict', check: 'task_id' });

    const throughB = new TaskStream(b, 'across-1');
    await throughB.until((e) => e.some((x) => x.event === 'started'));
    expect(throughB.status).toBe(200);
    expect(throughB.headers?.get('content-type')).toMatch(/^text\/event-stream/);
    onA.chunk(req.request_id, chatDelta('one') + chatDelta('two'));
    const seen = await throughB.until((e) => tokens(e).length === 2);
    const resumeAfter = seen.find((e) => e.event === 'token' && e.data.t === 'one')!.id;

    const throughC = new TaskStream(c, 'across-1', { 'last-event-id': String(resumeAfter) });
    await throughC.until((e) => tokens(e).length === 1);
    // Resumed: nothing up to the event named, everything after it.
    expect(throughC.events[0].id).toBe(resumeAfter + 1);
    expect(tokens(throughC.events)).toEqual(['two']);
    onA.chunk(req.request_id, chatDelta('three'));
    await throughB.until((e) => tokens(e).length === 3);
    await throughC.until((e) => tokens(e).length === 2);

    const cancelled = await cancel(c, 'across-1');
    expect(cancelled.status).toBe(200);
    expect(cancelled.json).toMatchObject({ task_id: 'across-1', status: 'cancelled', tokens_out: 3, error: { code: 'cancelled', retriable: false } });
    expect(await onA.next('cancel')).toMatchObject({ request_id: req.request_id, reason: 'client_disconnect' });
    await throughB.done;
    await throughC.done;
    // Both relayed streams got the owner's events byte for byte, and ended with it.
    const direct = await readStream(a, 'across-1');
    expect(throughB.text).toBe(direct.text);
    expect(direct.text.endsWith(throughC.text)).toBe(true);
    expect(throughB.events.at(-1)).toMatchObject({ event: 'error', id: cancelled.json.last_event_id, data: { code: 'cancelled' } });
    expect((await getJson(b, '/v1/tasks/across-1')).json).toMatchObject({ status: 'cancelled', last_event_id: cancelled.json.last_event_id });
    // Last-Event-ID is checked by the owner, as on its own public route.
    const beyond = await readStream(b, 'across-1', { 'last-event-id': String(cancelled.json.last_event_id + 1) });
    expect(beyond.status).toBe(400);
  });

  it("a task submitted through B runs on A's worker (forwarded) and is read, streamed and cancelled through C", async () => {
    const onA = await worker(a, 'fwd-model');
    const models = async (gw: TestGateway) =>
      ((await admin(gw.url, 'GET', '/admin/workers', TEST_ADMIN_TOKEN)).json.data as Array<{ models: string[] }>).flatMap((w) => w.models);
    await eventually(async () => (await models(b)).includes('fwd-model'), WAIT, "B sees A's worker");
    expect((await submit(b, chatTask('fwd-model', { task_id: 'fwd-1' }))).status).toBe(202);
    const req = await onA.next('request');
    const stream = new TaskStream(c, 'fwd-1');
    onA.chunk(req.request_id, chatDelta('far') + chatDelta('away'));
    await stream.until((e) => tokens(e).length === 2);
    expect((await getJson(a, '/v1/tasks/fwd-1')).json).toMatchObject({ task_id: 'fwd-1', status: 'running', tokens_out: 2 });
    const cancelled = await cancel(c, 'fwd-1');
    expect(cancelled.json).toMatchObject({ status: 'cancelled', tokens_out: 2 });
    await stream.done;
    expect(stream.events.at(-1)).toMatchObject({ event: 'error', data: { code: 'cancelled' } });
  });

  it('relayed readers count at the owner (tasks.max_readers), and one that leaves is detached there', async () => {
    const onA = await worker(a, 'leave-model');
    expect((await submit(a, chatTask('leave-model', { task_id: 'leave-1' }))).status).toBe(202);
    const req = await onA.next('request');
    const readers = [new TaskStream(b, 'leave-1'), new TaskStream(c, 'leave-1')];
    for (const r of readers) await r.until((e) => e.some((x) => x.event === 'started'));
    // TASKS_MAX_READERS=2: the owner refuses a third reader, whichever replica relays it.
    const third = await readStream(b, 'leave-1');
    expect(third.status).toBe(409);
    expect(JSON.parse(third.text).error.code).toBe('conflict');
    readers[0].close();
    // The relay closes its call to the owner, which detaches the reader: a new one gets in.
    const next = (await eventually(
      async () => {
        const r = new TaskStream(c, 'leave-1');
        await r.until((e) => e.length > 0).catch(() => undefined);
        if (r.status === 200) return r;
        r.close();
        return undefined;
      },
      WAIT,
      'a reader slot freed at the owner',
    ))!;
    onA.chunk(req.request_id, chatDelta('x'));
    finish(onA, req.request_id);
    await next.done;
    await readers[1].done;
    expect(next.events.at(-1)?.event).toBe('end');
    expect(readers[1].text).toBe(next.text);
  });

  it('a session budget spent through A and through B counts once for the session, on every replica', async () => {
    // A model per replica: each task runs on the worker of the replica it was submitted to, whatever forwarding would do.
    const onA = await worker(a, 'budget-a');
    const onB = await worker(b, 'budget-b');
    const body = (model: string, max: number) => chatTask(model, { session_id: 'shared-session', max_tokens: max, budget: { tokens: 100 } });
    const run = async (gw: TestGateway, w: ScriptedWorker, model: string) => {
      const accepted = await submit(gw, body(model, 16));
      expect(accepted.status).toBe(202);
      const req = await w.next('request');
      w.chunk(req.request_id, chatDelta('a') + `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 10, completion_tokens: 20 } })}\n\n`);
      finish(w, req.request_id);
      await eventually(async () => (await getJson(gw, `/v1/tasks/${accepted.json.task_id}`)).json.status === 'completed', WAIT);
      return accepted;
    };
    const client = new Redis(replicas.redis.url);
    const spent = async () => Number(await client.hget(`${TASK_KEY_PREFIX}session:default\u0000s\u0000shared-session`, 'tokens'));
    try {
      const first = await run(a, onA, 'budget-a');
      expect(first.headers.get('x-budget-remaining-tokens')).toBe('100');
      await eventually(async () => (await spent()) === 30, WAIT, "A's spending in Redis");
      const second = await run(b, onB, 'budget-b');
      // B admitted it against what A had spent.
      expect(second.headers.get('x-budget-remaining-tokens')).toBe('70');
      await eventually(async () => (await spent()) === 60, WAIT, "B's spending in Redis");
      // C never ran a task of the session, yet refuses what the session cannot pay for: 60 spent, 40 left.
      const refused = await submit(c, body('budget-a', 40));
      expect(refused.status).toBe(429);
      expect(refused.json.error).toMatchObject({ code: 'session_budget_exceeded', check: 'session_tokens', limit: 100, used: 60, remaining: 40 });
      expect(refused.headers.get('x-budget-remaining-tokens')).toBe('40');
      expect(await spent()).toBe(60);
    } finally {
      client.disconnect();
    }
  });

  it('Redis frozen: a task is still admitted and read where it runs; another replica answers 503, not 404', async () => {
    const onA = await worker(a, 'frozen-model');
    replicas.redis.pause();
    try {
      const accepted = await submit(a, chatTask('frozen-model', { task_id: 'frozen-1' }));
      expect(accepted.status).toBe(202);
      await onA.next('request');
      expect((await getJson(a, '/v1/tasks/frozen-1')).json).toMatchObject({ task_id: 'frozen-1', status: 'running' });
      const elsewhere = await getJson(b, '/v1/tasks/frozen-1');
      expect(elsewhere.status).toBe(503);
      expect(elsewhere.json.error).toMatchObject({ code: 'dependency_unavailable' });
    } finally {
      replicas.redis.resume();
    }
    for (const gw of [a, b, c]) {
      await eventually(async () => (await admin(gw.url, 'GET', '/admin/cluster', TEST_ADMIN_TOKEN)).json.members.length === 3, WAIT, 're-joined');
    }
    expect((await getJson(a, '/v1/tasks/frozen-1')).status).toBe(200);
  });

  it('a task whose replica is gone is answered like one that does not exist', async () => {
    const onC = await worker(c, 'lost-model');
    expect((await submit(c, chatTask('lost-model', { task_id: 'lost-1' }))).status).toBe(202);
    await onC.next('request');
    expect((await getJson(a, '/v1/tasks/lost-1')).status).toBe(200);
    await c.close();
    const missing = await getJson(a, '/v1/tasks/never-was');
    for (const gw of [a, b]) {
      const lost = await getJson(gw, '/v1/tasks/lost-1');
      expect(lost.status).toBe(404);
      expect(lost.json.error.code).toBe(missing.json.error.code);
      expect((await readStream(gw, 'lost-1')).status).toBe(404);
      expect((await cancel(gw, 'lost-1')).status).toBe(404);
    }
    // A new process under the same replica id does not hold the tasks of the one before.
    c = await replicas.start('gw-c');
    expect((await getJson(c, '/v1/tasks/lost-1')).status).toBe(404);
    // Its id is free again: the record naming the lost replica is taken over by the next submit.
    const onA = await worker(a, 'lost-model');
    expect((await submit(a, chatTask('lost-model', { task_id: 'lost-1' }))).status).toBe(202);
    await onA.next('request');
    expect((await getJson(b, '/v1/tasks/lost-1')).json).toMatchObject({ task_id: 'lost-1', status: 'running' });
  });
});
