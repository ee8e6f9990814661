/**
 * Contract: "Model advertisement and worker selection" — exact model routing, lowest load with
 * round-robin tie breaking among workers that support the model.
 */
import { useScope } from './support/scope';
import { firstRequest, ScriptedWorker } from './support/worker';
import { chatBody, uniqueModel, waitUntil } from './support/util';

describe('routing and worker selection', () => {
  const scope = useScope();

  /** Sends one request and answers it from whichever worker receives it; returns that worker's label. */
  async function roundTrip(model: string, workers: ScriptedWorker[], marker: string): Promise<string> {
    const x = scope.post('/v1/chat/completions', chatBody(model, { marker }));
    const { worker, frame } = await firstRequest(workers, (f) => JSON.parse(f.body).marker === marker);
    worker.respondJson(frame.request_id, { served_by: worker.label });
    const res = await x.done;
    expect(res.status).toBe(200);
    expect(res.json()).toEqual({ served_by: worker.label });
    return worker.label;
  }

  test('requests are routed only to workers that advertise the exact model', async () => {
    const [m1, m2] = [uniqueModel('exact'), uniqueModel('exact')];
    const a = await scope.worker({ models: [m1] }, {}, 'A');
    const b = await scope.worker({ models: [m2] }, {}, 'B');
    const served: string[] = [];
    for (let i = 0; i < 3; i++) {
      served.push(await roundTrip(m1, [a, b], `m1-${i}`));
      served.push(await roundTrip(m2, [a, b], `m2-${i}`));
    }
    expect(served).toEqual(['A', 'B', 'A', 'B', 'A', 'B']);
    expect(a.requests().every((r) => r.model === m1)).toBe(true);
    expect(b.requests().every((r) => r.model === m2)).toBe(true);
  });

  test('model names are matched exactly (no prefix or case-insensitive matching)', async () => {
    const model = uniqueModel('Exact');
    const w = await scope.worker({ models: [model] });
    for (const near of [model.toLowerCase(), `${model}-v2`, model.slice(0, -1)]) {
      const res = await scope.post('/v1/chat/completions', chatBody(near)).done;
      expect({ near, status: res.status }).toEqual({ near, status: 404 });
    }
    expect(w.requests()).toHaveLength(0);
  });

  test('equal load: sequential requests alternate between two workers (round-robin tie breaking)', async () => {
    const model = uniqueModel('rr');
    const a = await scope.worker({ models: [model], max_concurrent: 4 }, {}, 'A');
    const b = await scope.worker({ models: [model], max_concurrent: 4 }, {}, 'B');
    const served: string[] = [];
    for (let i = 0; i < 6; i++) served.push(await roundTrip(model, [a, b], `rr-${i}`));
    for (let i = 1; i < served.length; i++) expect(served[i]).not.toBe(served[i - 1]);
    expect(served.filter((s) => s === 'A')).toHaveLength(3);
  });

  test('lowest load wins: while one worker holds a request, new requests go to the idle one', async () => {
    const model = uniqueModel('load');
    const a = await scope.worker({ models: [model], max_concurrent: 4 }, {}, 'A');
    const b = await scope.worker({ models: [model], max_concurrent: 4 }, {}, 'B');
    const held = scope.post('/v1/chat/completions', chatBody(model, { marker: 'held' }));
    const first = await firstRequest([a, b]);
    const idle = first.worker === a ? b : a;
    const served: string[] = [];
    for (let i = 0; i < 4; i++) served.push(await roundTrip(model, [a, b], `load-${i}`));
    expect(served).toEqual([idle.label, idle.label, idle.label, idle.label]);
    first.worker.respondJson(first.frame.request_id, { ok: true });
    expect((await held.done).status).toBe(200);
  });

  test('a worker at max_concurrent receives no further requests until a slot frees', async () => {
    const model = uniqueModel('cap');
    const w = await scope.worker({ models: [model], max_concurrent: 1 });
    const x1 = scope.post('/v1/chat/completions', chatBody(model, { marker: 1 }));
    const r1 = await w.nextRequest();
    const x2 = scope.post('/v1/chat/completions', chatBody(model, { marker: 2 }));
    await waitUntil(async () => (await scope.admin.provider('local'))?.queue_depth >= 1, 'the second request to queue');
    expect(w.requests()).toHaveLength(1);
    w.respondJson(r1.request_id, { n: 1 });
    const r2 = await w.nextRequest();
    expect(JSON.parse(r2.body).marker).toBe(2);
    w.respondJson(r2.request_id, { n: 2 });
    expect((await x1.done).json()).toEqual({ n: 1 });
    expect((await x2.done).json()).toEqual({ n: 2 });
  });

  test('max_concurrent 0 is treated as 1', async () => {
    const model = uniqueModel('zero');
    const w = await scope.worker({ models: [model], max_concurrent: 0 });
    const x1 = scope.post('/v1/chat/completions', chatBody(model, { marker: 1 }));
    const r1 = await w.nextRequest();
    const x2 = scope.post('/v1/chat/completions', chatBody(model, { marker: 2 }));
    await waitUntil(async () => (await scope.admin.provider('local'))?.queue_depth >= 1, 'the second request to queue');
    expect(w.requests()).toHaveLength(1);
    w.respondJson(r1.request_id, { n: 1 });
    const r2 = await w.nextRequest();
    w.respondJson(r2.request_id, { n: 2 });
    expect((await x1.done).status).toBe(200);
    expect((await x2.done).status).toBe(200);
  });
});
