import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { FakeClock } from '../../test/support/fake-clock';
import { FakeSocket } from '../../test/worker/support/fake-socket';
import { RecordingLogger } from '../../test/worker/support/recording-logger';
import { workerConfig } from './config';
import { WorkerDaemon } from './daemon';

/**
 * The composition root on a fake clock: the stop and drain deadlines it owns. The gateway is a
 * FakeSocket; the backend a local server that never answers, so relayed requests stay in flight.
 */
describe('WorkerDaemon (fake clock)', () => {
  let backend: Server;
  let backendUrl: string;
  const daemons: WorkerDaemon[] = [];

  beforeAll(async () => {
    backend = createServer(() => undefined);
    await new Promise<void>((resolve) => backend.listen(0, '127.0.0.1', resolve));
    backendUrl = `http://127.0.0.1:${(backend.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    backend.closeAllConnections();
    await new Promise((resolve) => backend.close(resolve));
  });

  afterEach(async () => {
    for (const d of daemons.splice(0)) {
      void d.stop();
      void d.stop();
    }
  });

  async function started(over: Parameters<typeof workerConfig>[0] = { workerSecret: 's' }) {
    const clock = new FakeClock();
    const log = new RecordingLogger();
    const sockets: FakeSocket[] = [];
    const config = workerConfig({ backendUrl, models: ['m'], probe: false, drainTimeoutMs: 10_000, ...over });
    const daemon = new WorkerDaemon(config, {
      clock,
      logger: log,
      drainGraceMs: 5_000,
      openSocket: (url, options) => {
        const s = new FakeSocket(url, options);
        sockets.push(s);
        return s.asWebSocket();
      },
    });
    daemons.push(daemon);
    daemon.start();
    await new Promise((r) => setImmediate(r));
    const gateway = sockets[0];
    gateway.opened();
    gateway.frame({ type: 'register_ack', worker_id: 'w-1', models: ['m'], features: [] });
    return { clock, log, daemon, gateway, sockets };
  }

  function request(id: string) {
    return { type: 'request', request_id: id, model: 'm', endpoint_path: '/v1/chat/completions', is_streaming: false, body: '{}' };
  }

  it('registers on open and answers pings with its load', async () => {
    const t = await started();
    expect(t.gateway.sent[0]).toMatchObject({ type: 'register', models: ['m'], max_concurrent: 1, features: expect.arrayContaining(['response_start']) });
    expect(t.daemon.status).toMatchObject({ state: 'connected', workerId: 'w-1', currentLoad: 0 });
    t.gateway.frame(request('r1'));
    t.gateway.frame({ type: 'ping', timestamp_unix_ms: 7 });
    expect(t.gateway.sent[1]).toEqual({ type: 'pong', current_load: 1, timestamp_unix_ms: 7 });
  });

  it('stop with nothing in flight closes the link at once and exits 0', async () => {
    const t = await started();
    const exit = t.daemon.stop();
    expect(t.gateway.sent[1]).toEqual({ type: 'models_update', models: [], current_load: 0 });
    expect(t.gateway.closeCalls).toEqual([{ code: 1000, reason: 'worker shutting down' }]);
    t.gateway.closed(1000, '');
    await expect(exit).resolves.toBe(0);
    expect(t.daemon.status.state).toBe('stopped');
  });

  it('stop waits drain_timeout for in-flight requests, then aborts them and closes (terminating a peer that never answers)', async () => {
    const t = await started();
    t.gateway.frame(request('r1'));
    void t.daemon.stop();
    expect(t.daemon.status.state).toBe('stopping');
    t.clock.advance(9_999);
    expect(t.gateway.closeCalls).toEqual([]);
    t.clock.advance(1);
    expect(t.gateway.closeCalls).toEqual([{ code: 1000, reason: 'worker shutting down' }]);
    expect(t.log.messages('warn')).toContain('aborted a request with nothing relayed yet at the shutdown deadline; the gateway can requeue it');
    t.clock.advance(3_000);
    expect(t.gateway.terminated).toBe(true);
    await expect(t.daemon.waitForExit()).resolves.toBe(0);
  });

  it('a second stop skips the wait', async () => {
    const t = await started();
    t.gateway.frame(request('r1'));
    void t.daemon.stop();
    void t.daemon.stop();
    expect(t.gateway.closeCalls).toEqual([{ code: 1000, reason: 'worker shutting down' }]);
  });

  it('after graceful_shutdown, closes the link itself once the gateway deadline plus the grace has passed', async () => {
    const t = await started();
    t.gateway.frame(request('r1'));
    t.gateway.frame({ type: 'graceful_shutdown', reason: 'maintenance', drain_timeout_secs: 20 });
    expect(t.daemon.status.draining).toBe(true);
    t.gateway.frame(request('r2'));
    expect(t.gateway.sent[t.gateway.sent.length - 1]).toMatchObject({ type: 'response_complete', request_id: 'r2', status_code: 503 });
    // The watchdog would otherwise fire first (3 x 15 s heartbeat): the gateway keeps pinging.
    for (let i = 0; i < 2; i++) {
      t.clock.advance(10_000);
      t.gateway.emit('ping');
    }
    t.clock.advance(4_999);
    expect(t.gateway.closeCalls).toEqual([]);
    t.clock.advance(1);
    expect(t.gateway.closeCalls).toEqual([{ code: 1000, reason: 'drain deadline passed' }]);
  });

  it('reconnects after the link is lost, dropping what was in flight on it', async () => {
    const t = await started();
    t.gateway.frame(request('r1'));
    t.gateway.closed(1006, '');
    expect(t.daemon.status).toMatchObject({ state: 'waiting_to_reconnect', currentLoad: 0 });
    await t.clock.advanceAsync(1_200);
    expect(t.sockets).toHaveLength(2);
  });

  it('exits after a gateway drain with exitOnDrain', async () => {
    const t = await started({ workerSecret: 's', exitOnDrain: true });
    t.gateway.frame({ type: 'graceful_shutdown' });
    t.gateway.closed(1000, 'drain complete');
    await expect(t.daemon.waitForExit()).resolves.toBe(0);
  });
});
