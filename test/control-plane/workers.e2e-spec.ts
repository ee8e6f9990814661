import { CloseReasons } from '../../src/protocol';
import { startGateway, TestGateway } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { chat, eventually, post } from '../support/http';
import { call, createPool, OK_BODY, refusedRegistration, withoutToken } from './support';

/** One worker on the admin API: its details, and the cordon of its name (drain until undrain). */
describe('admin workers: details and the worker-name cordon', () => {
  let gw: TestGateway;
  beforeEach(async () => {
    gw = await startGateway({ HEARTBEAT_INTERVAL_SECS: '0.2', HEARTBEAT_TIMEOUT_SECS: '5', CANCEL_GRACE_SECS: '30' });
  });
  afterEach(() => gw.close());

  it('the new worker routes need the admin token', async () => {
    const { worker, ack } = await ScriptedWorker.register(gw.workerUrl, { models: ['auth'] });
    for (const [method, path] of [
      ['GET', `/admin/workers/${ack.worker_id}`],
      ['POST', `/admin/workers/${ack.worker_id}/undrain`],
      ['POST', `/admin/workers/${ack.worker_id}/drain`],
      ['GET', '/admin/cordons'],
      ['GET', '/admin/stats'],
    ]) {
      expect(await withoutToken(gw, method, path)).toEqual([401, 401]);
    }
    expect(worker.closeState).toBeUndefined(); // the refused drain did nothing
    expect((await call(gw, 'GET', `/admin/workers/${ack.worker_id}`)).status).toBe(200);
    expect((await call(gw, 'POST', `/admin/workers/${ack.worker_id}/undrain`)).status).toBe(200);
    expect((await call(gw, 'GET', '/admin/cordons')).status).toBe(200);
    expect((await call(gw, 'GET', '/admin/stats')).status).toBe(200);
    worker.close();
  });

  it('unknown worker ids are 404 not_found on every worker route', async () => {
    for (const [method, path] of [
      ['GET', '/admin/workers/w-nope'],
      ['POST', '/admin/workers/w-nope/drain'],
      ['POST', '/admin/workers/w-nope/undrain'],
      ['POST', '/admin/workers/w-nope/refresh-models'],
    ]) {
      const res = await call(gw, method, path, method === 'POST' ? {} : undefined);
      expect(res.status).toBe(404);
      expect(res.json.error).toMatchObject({ code: 'not_found', message: "Worker 'w-nope' not found", retriable: false });
    }
  });

  it('GET /admin/workers/:id: models, capabilities, endpoints, runner, in-flight and held request ids, load, latency, ejection, cordon', async () => {
    const w = await ScriptedWorker.connect(gw.workerUrl);
    w.send({
      type: 'register',
      protocol_version: '2026-04-bridge-v1',
      worker_name: 'detail-1',
      models: ['dm', 'dm-2'],
      max_concurrent: 3,
      capabilities: { dm: { vision: true, context_length: 8192 } },
      endpoints: ['/v1/chat/completions'],
      priority: 70, // above the default floor of 50: a worker may rank itself lower, not higher
      runner: { type: 'llama-server', version: 'b6500' },
    });
    const ack = await w.next('register_ack');
    const id = ack.worker_id as string;

    // One answered request gives a latency sample.
    const done = post(gw.url, '/v1/chat/completions', chat('dm'));
    w.complete((await w.next('request')).request_id, OK_BODY);
    expect((await done).status).toBe(200);
    // One running, one cancelled by its client (slot held until the worker answers).
    const running = post(gw.url, '/v1/chat/completions', chat('dm'));
    const r1 = await w.next('request');
    const controller = new AbortController();
    const abandoned = post(gw.url, '/v1/chat/completions', chat('dm'), {}, controller.signal).catch(() => undefined);
    const r2 = await w.next('request');
    controller.abort();
    await abandoned;
    expect(await w.next('cancel')).toMatchObject({ request_id: r2.request_id });

    const res = await call(gw, 'GET', `/admin/workers/${id}`);
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({
      id,
      name: 'detail-1',
      provider: 'local',
      models: ['dm', 'dm-2'],
      capabilities: { dm: { vision: true, context_length: 8192 } },
      endpoints: ['/v1/chat/completions'],
      runner: { type: 'llama-server', version: 'b6500' },
      priority: 70,
      max_concurrent: 3,
      in_flight: 1,
      in_flight_request_ids: [r1.request_id],
      held_slots: 1,
      held_request_ids: [r2.request_id],
      load: 2,
      draining: false,
      consecutive_failures: 0,
      ejected: false,
      ejected_until: null,
      cordoned: false,
      cordon: null,
    });
    expect(typeof res.json.latency_ms).toBe('number');
    // The list shows the same worker with the cordon fields, without request ids.
    const listed = (await call(gw, 'GET', '/admin/workers')).json.data.find((x: { id: string }) => x.id === id);
    expect(listed).toMatchObject({ cordoned: false, cordon: null, in_flight: 1 });
    expect(listed).not.toHaveProperty('in_flight_request_ids');

    w.complete(r1.request_id, OK_BODY);
    expect((await running).status).toBe(200);
    w.close();
  });

  it('drain keeps the worker name out of rotation until undrain: reconnections are refused 1013, other names are not; undrain of a gone worker clears the cordon', async () => {
    const { worker, ack } = await ScriptedWorker.register(gw.workerUrl, { models: ['nc'], worker_name: 'gpu-7' });
    const drained = await call(gw, 'POST', `/admin/workers/${ack.worker_id}/drain`, { timeout_secs: 5, reason: 'reboot' });
    expect(drained.status).toBe(202);
    expect(drained.json).toMatchObject({ id: ack.worker_id, draining: true, cordoned: true, cordon: 'worker' });
    expect(await worker.next('graceful_shutdown')).toMatchObject({ reason: 'reboot', drain_timeout_secs: 5 });
    expect(await worker.closed).toEqual({ code: 1000, reason: 'graceful shutdown complete' });

    // Today's daemon reconnects within seconds: the name is refused, so it is not back in rotation.
    const { close, frames } = await refusedRegistration(gw, { worker_name: 'gpu-7', models: ['nc'] });
    expect(close).toEqual({ code: 1013, reason: CloseReasons.CORDONED });
    expect(frames).not.toContain('register_ack');
    expect((await call(gw, 'GET', '/admin/workers')).json.data).toEqual([]);

    // The same name in another pool, and another name in this one, are not cordoned.
    const east = await createPool(gw, 'east');
    const twin = await ScriptedWorker.register(gw.workerUrl, { models: ['nc'], worker_name: 'gpu-7' }, east);
    const other = await ScriptedWorker.register(gw.workerUrl, { models: ['nc'], worker_name: 'gpu-8' });
    twin.worker.close();
    const pending = post(gw.url, '/v1/chat/completions', chat('nc'), { 'x-switchboard-provider': 'local' });
    const r = await other.worker.next('request');
    other.worker.complete(r.request_id, OK_BODY);
    expect((await pending).status).toBe(200);

    const cordons = (await call(gw, 'GET', '/admin/cordons')).json;
    expect(cordons).toEqual({
      pools: [],
      workers: [{ provider: 'local', name: 'gpu-7', since: expect.any(String), reason: 'reboot', worker_ids: [ack.worker_id] }],
    });

    // The drained connection is gone: GET is 404, but undrain by its id still clears the cordon.
    expect((await call(gw, 'GET', `/admin/workers/${ack.worker_id}`)).status).toBe(404);
    const undrain = await call(gw, 'POST', `/admin/workers/${ack.worker_id}/undrain`);
    expect(undrain.status).toBe(200);
    expect(undrain.json).toEqual({ id: ack.worker_id, provider: 'local', name: 'gpu-7', undrained: true, connected: false });
    expect((await call(gw, 'GET', '/admin/cordons')).json.workers).toEqual([]);
    // Its id is forgotten with the cordon.
    expect((await call(gw, 'POST', `/admin/workers/${ack.worker_id}/undrain`)).status).toBe(404);

    // The name registers and serves again.
    const back = await ScriptedWorker.register(gw.workerUrl, { models: ['nc'], worker_name: 'gpu-7' });
    other.worker.close();
    await eventually(async () => (await call(gw, 'GET', '/admin/workers')).json.data.length === 1);
    const again = post(gw.url, '/v1/chat/completions', chat('nc'));
    const r2 = await back.worker.next('request');
    back.worker.complete(r2.request_id, OK_BODY);
    expect((await again).status).toBe(200);
    expect((await call(gw, 'GET', `/admin/workers/${back.ack.worker_id}`)).json).toMatchObject({ cordoned: false, cordon: null });
    back.worker.close();
  });

  it('drain cordons every live connection of the name; undrain of a live worker lifts the cordon without touching it', async () => {
    const a = await ScriptedWorker.register(gw.workerUrl, { models: ['dup'], worker_name: 'same', max_concurrent: 2 });
    const b = await ScriptedWorker.register(gw.workerUrl, { models: ['dup'], worker_name: 'same' });
    const inFlight = post(gw.url, '/v1/chat/completions', chat('dup'));
    const got = await ScriptedWorker.firstOf([a.worker, b.worker], 'request');
    const busy = got.worker;
    const busyId = busy === a.worker ? a.ack.worker_id : b.ack.worker_id;
    const idle = busy === a.worker ? b.worker : a.worker;

    expect((await call(gw, 'POST', `/admin/workers/${busyId}/drain`, {})).status).toBe(202);
    await busy.next('graceful_shutdown');
    await idle.next('graceful_shutdown');
    expect(await idle.closed).toEqual({ code: 1000, reason: 'graceful shutdown complete' });
    const view = (await call(gw, 'GET', `/admin/workers/${busyId}`)).json;
    expect(view).toMatchObject({ draining: true, cordoned: true, cordon: 'worker', in_flight_request_ids: [got.frame.request_id] });

    const undrain = await call(gw, 'POST', `/admin/workers/${busyId}/undrain`);
    expect(undrain.json).toEqual({ id: busyId, provider: 'local', name: 'same', undrained: true, connected: true });
    // Lifting it again is harmless.
    expect((await call(gw, 'POST', `/admin/workers/${busyId}/undrain`)).json).toMatchObject({ undrained: false, connected: true });
    // The live connection still finishes its drain (its daemon was told to), then the name may return.
    busy.complete(got.frame.request_id, OK_BODY);
    expect((await inFlight).status).toBe(200);
    await busy.closed;
    (await ScriptedWorker.register(gw.workerUrl, { models: ['dup'], worker_name: 'same' })).worker.close();
  });

  it('a pool cordon shows on its workers as cordon "pool"', async () => {
    const { worker, ack } = await ScriptedWorker.register(gw.workerUrl, { models: ['pc'], max_concurrent: 2 });
    const held = post(gw.url, '/v1/chat/completions', chat('pc'));
    const r = await worker.next('request');
    expect((await call(gw, 'POST', '/v1/pools/local/drain', { deadline_ms: 5000 })).status).toBe(202);
    expect((await call(gw, 'GET', `/admin/workers/${ack.worker_id}`)).json).toMatchObject({ draining: true, cordoned: true, cordon: 'pool' });
    expect((await call(gw, 'GET', '/admin/cordons')).json.pools).toEqual([
      { pool: 'local', since: expect.any(String), reason: 'pool_drain', deadline_ms: 5000 },
    ]);
    worker.complete(r.request_id, OK_BODY);
    expect((await held).status).toBe(200);
    await worker.closed;
  });
});
