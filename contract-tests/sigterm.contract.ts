/**
 * Contract: graceful server shutdown — on SIGTERM the gateway turns unready (/health/ready 503),
 * keeps answering in-flight requests, drains workers with graceful_shutdown and exits 0. Each
 * test spawns its own gateway from dist/ (also when SWITCHBOARD_URL points elsewhere).
 */
import { spawnGateway, SpawnedGateway } from './support/server';
import { Scope } from './support/scope';
import { chatBody, uniqueModel, waitUntil, withTimeout } from './support/util';

describe('SIGTERM (dedicated gateway per test)', () => {
  let gw: SpawnedGateway | undefined;
  let scope: Scope;

  async function start(): Promise<SpawnedGateway> {
    gw = await spawnGateway({ label: 'sigterm', env: { SHUTDOWN_DRAIN_TIMEOUT_SECS: '15' } });
    scope = new Scope({ baseUrl: gw.url, wsUrl: gw.wsUrl, adminToken: gw.env.ADMIN_TOKEN });
    return gw;
  }

  afterEach(async () => {
    await scope?.cleanup().catch(() => undefined);
    await gw?.stop('SIGKILL');
    gw = undefined;
  });

  test('in-flight requests are answered, /health/ready turns 503 during the drain, and the process exits 0', async () => {
    const g = await start();
    const ready = await scope.request('/health/ready').done;
    expect(ready.status).toBe(200);
    const model = uniqueModel('term');
    const w = await scope.worker({ models: [model] }, { secret: g.env.WORKER_SECRET, provider: 'local' });
    const x = scope.post('/v1/chat/completions', chatBody(model));
    const req = await w.nextRequest();

    process.kill(g.pid, 'SIGTERM');
    await waitUntil(async () => (await scope.request('/health/ready').done).status === 503, '/health/ready to answer 503 after SIGTERM');
    expect(x.chunks).toHaveLength(0);

    w.respondJson(req.request_id, { finished: 'during shutdown' });
    const res = await x.done;
    expect(res.status).toBe(200);
    expect(res.json()).toEqual({ finished: 'during shutdown' });

    const exit = await withTimeout(g.exited, 20_000, 'the gateway to exit after SIGTERM');
    expect(exit).toEqual({ code: 0, signal: null });
  });

  test('on SIGTERM connected workers get graceful_shutdown and, once idle, close 1000 "graceful shutdown complete"', async () => {
    const g = await start();
    const model = uniqueModel('termw');
    const busy = await scope.worker({ models: [model] }, { secret: g.env.WORKER_SECRET, provider: 'local' }, 'busy');
    const x = scope.post('/v1/chat/completions', chatBody(model));
    const req = await busy.nextRequest();
    const idle = await scope.worker({ models: [uniqueModel('idle')] }, { secret: g.env.WORKER_SECRET, provider: 'local' }, 'idle');

    process.kill(g.pid, 'SIGTERM');
    await busy.next('graceful_shutdown');
    const idleClosed = await idle.closed;
    expect({ code: idleClosed.code, reason: idleClosed.reason }).toEqual({ code: 1000, reason: 'graceful shutdown complete' });
    expect(busy.isOpen).toBe(true);
    busy.respondJson(req.request_id, { ok: true });
    expect((await x.done).status).toBe(200);
    const busyClosed = await busy.closed;
    expect({ code: busyClosed.code, reason: busyClosed.reason }).toEqual({ code: 1000, reason: 'graceful shutdown complete' });
    await withTimeout(g.exited, 20_000, 'the gateway to exit after SIGTERM');
  });
});
