import OpenAI from 'openai';
import { chat, eventually, post } from '../support/http';
import { auditRows, createPool, lifecycleWorker, LifecycleGateway, POOL_SECRET, report, startLifecycleGateway, taskWhen } from './support';

describe('POST /v1/models/load', () => {
  let gw: LifecycleGateway;
  let openai: OpenAI;
  beforeAll(async () => {
    gw = await startLifecycleGateway();
    openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'k', maxRetries: 0 });
  });
  afterAll(() => gw.close());

  const load = (body: Record<string, unknown>) => gw.call('/v1/models/load', { verifiedOpToken: gw.tokenFor('model-load', body), ...body });

  it('relays model_load with the verified token, follows progress to completion, lists the model as loading meanwhile, and routes to it once the worker advertises it', async () => {
    await createPool(gw, 'load-a');
    const { worker, id } = await lifecycleWorker(gw, ['small-a'], { provider: 'load-a', secret: POOL_SECRET });
    const body = { modelId: 'big-a', quantization: 'awq-4bit', maxContextLength: 32768, gpuMemoryBudgetMB: 40000, pool: 'load-a' };
    const token = gw.tokenFor('model-load', body);
    const res = await gw.call('/v1/models/load', { ...body, verifiedOpToken: token });
    expect(res.status).toBe(202);
    expect(res.json).toEqual({
      taskId: expect.stringMatching(/^load-/),
      status: 'loading',
      progress: 0,
      eta: null,
      modelId: 'big-a',
      workers: [{ workerId: id, name: expect.any(String), pool: 'load-a', status: 'sent', progress: 0 }],
    });
    const taskId = res.json.taskId;
    const frame = await worker.next('model_load');
    expect(frame).toEqual({
      type: 'model_load',
      task_id: taskId,
      model_id: 'big-a',
      quantization: 'awq-4bit',
      max_context_length: 32768,
      gpu_memory_budget_mb: 40000,
      verified_op_token: token,
    });

    report(worker, taskId, 'accepted');
    report(worker, taskId, 'loading', { progress: 0.45, eta_secs: 180 });
    const loading = await taskWhen(gw, taskId, (t) => t.progress === 0.45);
    expect(loading).toMatchObject({ taskId, status: 'loading', progress: 0.45, eta: 180, workers: [{ status: 'loading', progress: 0.45, eta: 180 }] });
    const caps = await (await fetch(`${gw.url}/v1/capabilities`)).json();
    expect(caps.pools.find((p: any) => p.id === 'load-a').models.loading).toEqual([{ id: 'big-a', progress: 0.45, eta: 180 }]);

    // Loading is not serving: nothing advertises the model yet, so no request reaches the worker.
    const early = await post(gw.url, '/v1/chat/completions', chat('big-a'));
    expect(early.status).toBe(404);
    expect(early.json.error.code).toBe('model_not_found');

    report(worker, taskId, 'completed', { gpu_memory_used_mb: 38500 });
    const done = await taskWhen(gw, taskId, (t) => t.status === 'completed');
    expect(done).toEqual({
      taskId,
      status: 'completed',
      progress: 1,
      eta: 0,
      modelId: 'big-a',
      workers: [
        { workerId: id, name: expect.any(String), pool: 'load-a', status: 'completed', progress: 1, gpuMemoryUsedMB: 38500, loadTimeMs: expect.any(Number) },
      ],
      gpuMemoryUsedMB: 38500,
      loadTimeMs: expect.any(Number),
    });
    const after = await (await fetch(`${gw.url}/v1/capabilities`)).json();
    expect(after.pools.find((p: any) => p.id === 'load-a').models.loading).toEqual([]);
    expect(worker.count('request')).toBe(0);

    worker.send({ type: 'models_update', models: ['small-a', 'big-a'], current_load: 0 });
    const pending = eventually(async () => {
      try {
        return await openai.chat.completions.create({ model: 'big-a', messages: [{ role: 'user', content: 'hi' }] });
      } catch {
        return undefined;
      }
    });
    const request = await worker.next('request');
    expect(request.model).toBe('big-a');
    worker.complete(request.request_id, {
      id: 'c1',
      object: 'chat.completion',
      created: 1,
      model: 'big-a',
      choices: [{ index: 0, message: { role: 'assistant', content: 'loaded' }, finish_reason: 'stop' }],
    });
    expect((await pending)!.choices[0].message.content).toBe('loaded');

    const rows = await auditRows(gw, `task=${taskId}`);
    expect(rows.map((r) => r.outcome)).toEqual(['completed', 'accepted']);
    expect(rows[1]).toMatchObject({
      operation: 'model-load',
      model_id: 'big-a',
      target: { pool: 'load-a' },
      workers: [id],
      signers: ['alice', 'bob'],
      status: 202,
    });
    worker.close();
  });

  it('chooses by free capacity and GPU memory, loads replicas on several workers, and refuses what cannot fit', async () => {
    await createPool(gw, 'load-b');
    const doc = (free: number) => ({ models: { loaded: [], available: ['m-b', 'm-b2', 'm-b3', 'm-b4'] }, resources: { gpuMemoryFreeMB: free } });
    const busy = await lifecycleWorker(gw, ['other-b'], { provider: 'load-b', secret: POOL_SECRET, max_concurrent: 2, runner_capabilities: doc(80000) });
    // One request in flight on the worker with the most GPU memory: it has fewer free slots.
    const inFlight = post(gw.url, '/v1/chat/completions', chat('other-b'));
    const req = await busy.worker.next('request');
    const idle = await lifecycleWorker(gw, ['other-b'], { provider: 'load-b', secret: POOL_SECRET, max_concurrent: 2, runner_capabilities: doc(50000) });
    const small = await lifecycleWorker(gw, ['other-b'], { provider: 'load-b', secret: POOL_SECRET, max_concurrent: 2, runner_capabilities: doc(10000) });

    // Free slots first (idle over busy), and only where the budget fits (not small).
    const one = await load({ modelId: 'm-b', pool: 'load-b', gpuMemoryBudgetMB: 40000 });
    expect(one.status).toBe(202);
    expect(one.json.workers.map((w: any) => w.workerId)).toEqual([idle.id]);
    // With equal free slots, the most free memory: once busy is idle again it wins.
    busy.worker.complete(req.request_id, { ok: true });
    await inFlight;
    const mem = await load({ modelId: 'm-b', pool: 'load-b', gpuMemoryBudgetMB: 40000 });
    expect(mem.json.workers.map((w: any) => w.workerId)).toEqual([busy.id]);

    const tooBig = await load({ modelId: 'm-b2', pool: 'load-b', gpuMemoryBudgetMB: 90000 });
    expect(tooBig.status).toBe(409);
    expect(tooBig.json.error.message).toContain('has 90000 MB of GPU memory free');

    // Two replicas: equal free slots, so the two with the most free GPU memory.
    const two = await load({ modelId: 'm-b3', pool: 'load-b', replicas: 2 });
    expect(two.status).toBe(202);
    expect(two.json.workers.map((w: any) => w.workerId).sort()).toEqual([busy.id, idle.id].sort());
    const four = await load({ modelId: 'm-b4', pool: 'load-b', replicas: 4 });
    expect(four.status).toBe(409);
    expect(four.json.error.message).toContain('4 replica(s) asked, but only 3 worker(s)');

    // A model the runner documents do not list is unknown everywhere: 404.
    const unknown = await load({ modelId: 'not-available', pool: 'load-b' });
    expect([unknown.status, unknown.json.error.code]).toEqual([404, 'model_not_found']);

    for (const w of [busy, idle, small]) w.worker.close();
  });

  it('evictModel: drains the evicted model on that worker first (no request cut), sends it in the same model_load; routing then follows the models the worker reports', async () => {
    await createPool(gw, 'load-c', { queue_timeout_secs: 1 });
    const { worker, id } = await lifecycleWorker(gw, ['old-c'], { provider: 'load-c', secret: POOL_SECRET });
    const inFlight = post(gw.url, '/v1/chat/completions', chat('old-c'));
    const req = await worker.next('request');
    const res = await load({ modelId: 'new-c', evictModel: 'old-c', workerId: id });
    expect(res.status).toBe(202);
    expect(res.json.workers[0].status).toBe('draining');
    // Held out of routing: a new request for the evicted model is not sent to this worker.
    const waiting = post(gw.url, '/v1/chat/completions', chat('old-c'));
    expect(worker.has('model_load')).toBe(false);
    worker.complete(req.request_id, { answer: 'intact' });
    expect((await inFlight).json).toEqual({ answer: 'intact' });
    const frame = await worker.next('model_load');
    expect(frame).toMatchObject({ model_id: 'new-c', evict_model: 'old-c' });
    expect(worker.count('request')).toBe(1);
    worker.send({ type: 'models_update', models: ['new-c'] });
    report(worker, frame.task_id, 'completed');
    await eventually(async () => !(await gw.get(`/admin/workers/${id}`)).json.models.includes('old-c'));
    expect((await gw.get(`/v1/models/load/${frame.task_id}`)).json.status).toBe('completed');
    // Nobody serves old-c any more: the request that waited for it times out in the queue.
    expect((await waiting).json.error.code).toBe('queue_timeout');
    expect(worker.count('request')).toBe(1);
    // The eviction is an unload: the audit trail names it.
    const [accepted] = await auditRows(gw, `task=${frame.task_id}&outcome=accepted`);
    expect(accepted).toMatchObject({ model_id: 'new-c', target: { worker_id: id, evict_model: 'old-c' } });
    worker.close();
  });

  it('evictModel on a worker that serves any model (*): its requests for the evicted model in flight finish before model_load goes out', async () => {
    await createPool(gw, 'load-w');
    const { worker, id } = await lifecycleWorker(gw, ['*'], { provider: 'load-w', secret: POOL_SECRET });
    const inFlight = post(gw.url, '/v1/chat/completions', chat('old-w'));
    const req = await worker.next('request');
    const res = await load({ modelId: 'new-w', evictModel: 'old-w', workerId: id });
    expect([res.status, res.json.workers[0].status]).toEqual([202, 'draining']);
    expect(worker.has('model_load')).toBe(false);
    worker.complete(req.request_id, { answer: 'intact' });
    expect((await inFlight).json).toEqual({ answer: 'intact' });
    const frame = await worker.next('model_load');
    expect(frame).toMatchObject({ model_id: 'new-w', evict_model: 'old-w' });
    report(worker, frame.task_id, 'completed');
    await taskWhen(gw, frame.task_id, (t) => t.status === 'completed');
    worker.close();
  });

  it('a worker that disconnects mid-load fails the task with worker_disconnected; one that reports unsupported fails it clearly', async () => {
    const gone = await lifecycleWorker(gw, ['x-d']);
    const res = await load({ modelId: 'm-d', workerId: gone.id });
    const frame = await gone.worker.next('model_load');
    report(gone.worker, frame.task_id, 'loading', { progress: 0.2 });
    gone.worker.kill();
    const failed = await taskWhen(gw, res.json.taskId, (t) => t.status === 'failed');
    expect(failed.error).toMatch(/worker_disconnected/);
    expect(failed.workers[0]).toMatchObject({ status: 'failed', error: expect.stringMatching(/^worker_disconnected: /) });

    const plain = await lifecycleWorker(gw, ['x-e']);
    const second = await load({ modelId: 'm-e', workerId: plain.id });
    const f2 = await plain.worker.next('model_load');
    report(plain.worker, f2.task_id, 'unsupported', { error: 'vLLM without sleep mode cannot load models' });
    const unsupported = await taskWhen(gw, second.json.taskId, (t) => t.status === 'failed');
    expect(unsupported.workers[0]).toMatchObject({ status: 'unsupported', error: 'unsupported: vLLM without sleep mode cannot load models' });
    const rows = await auditRows(gw, `task=${second.json.taskId}`);
    expect(rows[0]).toMatchObject({ outcome: 'failed', status: 502, error_code: 'lifecycle_failed' });
    plain.worker.close();
  });

  it('a worker without model_lifecycle gets no frame: 422 lifecycle_unsupported, and the refusal is audited', async () => {
    await createPool(gw, 'load-f');
    const legacy = await lifecycleWorker(gw, ['m-f'], { provider: 'load-f', secret: POOL_SECRET, features: [] });
    const named = await load({ modelId: 'm-f2', workerId: legacy.id });
    expect([named.status, named.json.error.code]).toEqual([422, 'lifecycle_unsupported']);
    const pooled = await load({ modelId: 'm-f2', pool: 'load-f' });
    expect([pooled.status, pooled.json.error.code]).toEqual([422, 'lifecycle_unsupported']);
    expect(legacy.worker.has('model_load')).toBe(false);
    const [row] = await auditRows(gw, 'outcome=refused&limit=1');
    expect(row).toMatchObject({
      operation: 'model-load',
      model_id: 'm-f2',
      target: { pool: 'load-f' },
      outcome: 'refused',
      status: 422,
      error_code: 'lifecycle_unsupported',
      signers: ['alice', 'bob'],
    });
    legacy.worker.close();
  });

  it('nonsense and unknown lifecycle_status frames are dropped; the session and the task go on', async () => {
    const { worker, id } = await lifecycleWorker(gw, ['x-g']);
    const res = await load({ modelId: 'm-g', workerId: id });
    const frame = await worker.next('model_load');
    worker.send({ type: 'lifecycle_status', task_id: frame.task_id, status: 'loading', progress: 7 });
    worker.send({ type: 'lifecycle_status', task_id: frame.task_id, status: 'exploded' });
    report(worker, 'load-no-such-task', 'completed');
    report(worker, frame.task_id, 'loading', { progress: 0.5 });
    expect((await taskWhen(gw, res.json.taskId, (t) => t.progress === 0.5)).status).toBe('loading');
    expect(worker.closeState).toBeUndefined();
    expect((await gw.get(`/admin/workers/${id}`)).status).toBe(200);
    report(worker, frame.task_id, 'completed');
    worker.close();
  });

  it('refuses: unknown pool or worker 404, the same load already running 409 with its task id, a malformed token 400', async () => {
    const { worker, id } = await lifecycleWorker(gw, ['x-h'], { runner_capabilities: { models: { available: ['m-h'] } } });
    expect((await load({ modelId: 'm-h', pool: 'no-such-pool' })).json.error).toMatchObject({ code: 'not_found', message: "Pool 'no-such-pool' not found" });
    expect((await load({ modelId: 'm-h', workerId: 'w-missing' })).json.error).toMatchObject({ code: 'not_found', message: "Worker 'w-missing' not found" });
    expect((await load({ modelId: 'absent-h', workerId: id })).json.error.code).toBe('model_not_found');
    const first = await load({ modelId: 'm-h', workerId: id });
    expect(first.status).toBe(202);
    const again = await load({ modelId: 'm-h', workerId: id });
    expect(again.status).toBe(409);
    expect(again.json.error).toMatchObject({ code: 'conflict', task_id: first.json.taskId });
    const bad = await gw.call('/v1/models/load', { modelId: 'm-h', workerId: id, verifiedOpToken: 'not a token' });
    expect([bad.status, bad.json.error.code]).toEqual([400, 'op_token_malformed']);
    expect(
      (
        await gw.call('/v1/models/load', {
          modelId: 'm-h',
          workerId: id,
          replicas: 2,
          verifiedOpToken: gw.token({ operation: 'model-load', modelId: 'm-h', workerId: id, replicas: 2 }),
        })
      ).status,
    ).toBe(422);
    expect((await gw.get('/v1/models/load/load-unknown')).json.error).toMatchObject({ code: 'not_found', message: "Load task 'load-unknown' not found" });
    const refusals = await auditRows(gw, 'operation=model-load&outcome=refused&limit=6');
    expect(refusals.map((r) => r.status)).toEqual([422, 400, 409, 404, 404, 404]);
    worker.close();
  });

  it('a model name with a control character is 422 validation_failed, even with a token signed for it; nothing is sent', async () => {
    const { worker, id } = await lifecycleWorker(gw, ['x-ctl']);
    for (const body of [{ modelId: 'm\u0000ctl' }, { modelId: 'm-ctl', evictModel: 'x-ctl\n' }, { modelId: 'm-ctl', quantization: 'fp16\u0007' }]) {
      const res = await gw.call('/v1/models/load', { ...body, workerId: id, verifiedOpToken: gw.tokenFor('model-load', { ...body, workerId: id }) });
      expect([res.status, res.json.error.code, res.json.error.fields.map((f: any) => f.field)]).toEqual([422, 'validation_failed', [Object.keys(body).pop()]]);
    }
    expect(worker.has('model_load')).toBe(false);
    worker.close();
  });
});

describe('load tasks across a restart', () => {
  it('a finished task is still answered by the next run of the gateway (same database)', async () => {
    const { mkdtempSync, rmSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { tmpdir } = await import('node:os');
    const dir = mkdtempSync(join(tmpdir(), 'sb-lifecycle-restart-'));
    const env = { DATABASE_URL: `sqlite:${join(dir, 'sb.db')}`, INSTANCE_ID: 'gw-restart' };
    try {
      const first = await startLifecycleGateway(env);
      const { worker, id } = await lifecycleWorker(first, ['x']);
      const done = await first.call('/v1/models/load', {
        modelId: 'kept',
        workerId: id,
        verifiedOpToken: first.token({ operation: 'model-load', modelId: 'kept', workerId: id }),
      });
      const frame = await worker.next('model_load');
      report(worker, frame.task_id, 'completed', { gpu_memory_used_mb: 1200 });
      await eventually(async () => (await first.get(`/v1/models/load/${done.json.taskId}`)).json.status === 'completed');
      const open = await first.call('/v1/models/load', {
        modelId: 'open',
        workerId: id,
        verifiedOpToken: first.token({ operation: 'model-load', modelId: 'open', workerId: id }),
      });
      await first.close();

      const second = await startLifecycleGateway(env);
      try {
        expect((await second.get(`/v1/models/load/${done.json.taskId}`)).json).toMatchObject({ status: 'completed', modelId: 'kept', gpuMemoryUsedMB: 1200 });
        // Unfinished when the first run stopped: it cannot be followed any more, so it failed.
        expect((await second.get(`/v1/models/load/${open.json.taskId}`)).json).toMatchObject({ status: 'failed', modelId: 'open' });
      } finally {
        await second.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
