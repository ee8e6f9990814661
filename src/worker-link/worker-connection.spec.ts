import { EventEmitter } from 'node:events';
import type { IncomingMessage } from 'node:http';
import type { WebSocket } from 'ws';
import { FakeClock } from '../../test/support/fake-clock';
import { MemoryProviderStore, NoWorkerRecords } from '../../test/support/dispatch-harness';
import { AppConfig, loadConfig } from '../config';
import { FailedAuthLimiter } from '../auth/failed-auth-limiter';
import type { FrameVerdict } from '../dispatch/response-frames';
import { Fleet } from '../fleet/fleet.service';
import { WorkerSession } from '../fleet/worker-session';
import { LifecycleState } from '../observability/lifecycle-state';
import { MetricsService } from '../observability/metrics.service';
import { CloseCodes, CloseReasons, LifecycleStatusMessage, PROTOCOL_VERSION } from '../protocol';
import { ProvidersService } from '../providers/providers.service';
import { WorkerAuthGate } from './worker-auth-gate';
import { WorkerConnection, WorkerLinkDeps } from './worker-connection';

const SECRET = 'worker-secret-for-tests';

/** A worker's socket: frames the gateway sends are parsed and kept, a close is remembered and announced. */
class FakeSocket extends EventEmitter {
  sent: Array<Record<string, unknown>> = [];
  closedWith: [number, string] | undefined;
  /** Where ws keeps a socket's frame cap (see setMaxPayload). */
  _receiver = { _maxPayload: 0 };
  send(data: string) {
    this.sent.push(JSON.parse(data) as Record<string, unknown>);
  }
  close(code: number, reason: string) {
    this.closedWith = [code, reason];
  }
  /** The worker sends a text frame. */
  frame(message: Record<string, unknown>) {
    this.emit('message', Buffer.from(JSON.stringify(message)), false);
  }
  ofType(type: string) {
    return this.sent.filter((m) => m.type === type);
  }
}

/** What the link hands the dispatcher, recorded; `verdict` is its answer about the request. */
class RecordingFrames {
  calls: Array<[string, string, string]> = [];
  verdict: FrameVerdict = 'ok';
  onChunk(worker: WorkerSession, requestId: string) {
    this.calls.push(['chunk', worker.id, requestId]);
    return this.verdict;
  }
  onComplete(worker: WorkerSession, msg: { request_id: string }) {
    this.calls.push(['complete', worker.id, msg.request_id]);
    return this.verdict;
  }
  onResponseStart(worker: WorkerSession, msg: { request_id: string }) {
    this.calls.push(['start', worker.id, msg.request_id]);
    return this.verdict;
  }
  onWorkerError(worker: WorkerSession, requestId: string, code: string) {
    this.calls.push(['error', requestId, code]);
  }
}

/** Lets the handshake's authentication (promises) finish. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('WorkerConnection (fake socket, fake clock)', () => {
  let clock: FakeClock;
  let config: AppConfig;
  let providers: ProvidersService;
  let fleet: Fleet;
  let lifecycle: LifecycleState;
  let frames: RecordingFrames;
  let reports: Array<[WorkerSession, LifecycleStatusMessage]>;
  let deps: WorkerLinkDeps;
  let limiter: FailedAuthLimiter;

  beforeEach(async () => {
    clock = new FakeClock();
    config = loadConfig({
      PROVIDER_NAME: 'local',
      WORKER_SECRET: SECRET,
      HEARTBEAT_INTERVAL_SECS: '15',
      HEARTBEAT_TIMEOUT_SECS: '45',
      REGISTER_TIMEOUT_SECS: '10',
    });
    providers = new ProvidersService(config, new MemoryProviderStore());
    await providers.onModuleInit();
    lifecycle = new LifecycleState();
    const metrics = new MetricsService();
    fleet = new Fleet(config, clock, new NoWorkerRecords(), metrics, lifecycle);
    frames = new RecordingFrames();
    reports = [];
    limiter = new FailedAuthLimiter(config.authLimiter, clock);
    deps = {
      config,
      clock,
      providers,
      limiter,
      authGate: new WorkerAuthGate(limiter, config.authLimiter.maxFailures),
      fleet,
      frames,
      metrics,
      lifecycle,
      lifecycleReports: { onLifecycleStatus: (worker, message) => reports.push([worker, message]) },
    };
  });

  afterEach(() => limiter.stop());

  /** A connection of provider `local` whose authentication has finished (it awaits `register`). */
  async function connect(secret = SECRET): Promise<FakeSocket> {
    const socket = new FakeSocket();
    const request = {
      socket: { remoteAddress: '10.0.0.7' },
      headers: { 'x-worker-secret': secret },
      url: '/v1/worker/connect?provider=local',
    } as unknown as IncomingMessage;
    new WorkerConnection(socket as unknown as WebSocket, request, deps).start();
    await settle();
    return socket;
  }

  function register(socket: FakeSocket, extra: Record<string, unknown> = {}): void {
    socket.frame({ type: 'register', worker_name: 'gpu-1', models: ['m', 'n'], max_concurrent: 2, protocol_version: PROTOCOL_VERSION, ...extra });
  }

  async function registered(extra: Record<string, unknown> = {}): Promise<{ socket: FakeSocket; worker: WorkerSession }> {
    const socket = await connect();
    register(socket, extra);
    const [ack] = socket.ofType('register_ack');
    return { socket, worker: fleet.sessions.get(ack.worker_id as string)! };
  }

  const protocolError: [number, string] = [CloseCodes.PROTOCOL_ERROR, CloseReasons.PROTOCOL_ERROR];

  describe('sending', () => {
    it('holds request frames to the end of the turn; a cancel goes at once and takes them with it', async () => {
      const { socket, worker } = await registered();
      // The TCP socket under ws (sendInTurn corks it): a cork count, as Node keeps it.
      const tcp = {
        writableCorked: 0,
        cork() {
          this.writableCorked++;
        },
        uncork() {
          if (this.writableCorked > 0) this.writableCorked--;
        },
      };
      Object.assign(socket, { _socket: tcp });
      const request = { type: 'request', request_id: 'r-1', model: 'm', endpoint_path: '/v1/chat/completions', is_streaming: false, body: '{}' } as const;
      worker.channel.send(request);
      worker.channel.send({ ...request, request_id: 'r-2' });
      expect(tcp.writableCorked).toBe(1);
      worker.channel.send({ type: 'cancel', request_id: 'r-1', reason: 'client_disconnect' });
      expect(tcp.writableCorked).toBe(0);
      expect(socket.sent.slice(-3).map((m) => [m.type, m.request_id])).toEqual([
        ['request', 'r-1'],
        ['request', 'r-2'],
        ['cancel', 'r-1'],
      ]);
      await settle();
      expect(tcp.writableCorked).toBe(0);
    });
  });

  describe('registration', () => {
    it('acknowledges with the worker id, its models and the protocol version, and joins the fleet', async () => {
      const { socket, worker } = await registered();
      expect(socket.sent).toEqual([{ type: 'register_ack', worker_id: worker.id, models: ['m', 'n'], protocol_version: PROTOCOL_VERSION }]);
      expect(worker.id).toMatch(/^w-/);
      expect(worker).toMatchObject({ name: 'gpu-1', provider: 'local', maxConcurrent: 2, remoteAddress: '10.0.0.7' });
      expect(worker.features.size).toBe(0);
      expect(socket.closedWith).toBeUndefined();
      // Responses may now be larger than the register cap.
      expect(socket._receiver._maxPayload).toBe(config.connections.maxWorkerFrameBytes);
    });

    it('negotiates only the features the worker asked for that the gateway speaks, once each', async () => {
      const { socket, worker } = await registered({ features: ['model_lifecycle', 'teleport', 'model_lifecycle'] });
      expect(socket.ofType('register_ack')[0].features).toEqual(['model_lifecycle']);
      expect([...worker.features]).toEqual(['model_lifecycle']);
    });

    it('a wrong secret is refused 1008', async () => {
      const socket = await connect('wrong');
      // Unknown material costs a real scrypt check.
      for (let i = 0; i < 500 && !socket.closedWith; i++) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(socket.closedWith).toEqual([CloseCodes.POLICY_VIOLATION, CloseReasons.AUTH_FAILED]);
    });

    it('closes 1002 when no register frame comes within the registration timeout', async () => {
      const socket = await connect();
      clock.advance(9_999);
      expect(socket.closedWith).toBeUndefined();
      clock.advance(1);
      expect(socket.closedWith).toEqual(protocolError);
      expect(fleet.sessions.count()).toBe(0);
    });

    it('a worker name an operator cordoned is refused 1013', async () => {
      fleet.cordons.cordon('local', 'gpu-1', 'w-old', 'maintenance', clock.now());
      const socket = await connect();
      register(socket);
      expect(socket.closedWith).toEqual([CloseCodes.TRY_AGAIN_LATER, CloseReasons.CORDONED]);
      expect(socket.ofType('register_ack')).toEqual([]);
      expect(fleet.sessions.count()).toBe(0);
    });

    it('is refused 1012 while the gateway shuts down: before authentication, and at register', async () => {
      const early = await connect();
      lifecycle.beginShutdown();
      register(early);
      expect(early.closedWith).toEqual([CloseCodes.SERVICE_RESTART, CloseReasons.GATEWAY_RESTARTING]);
      const late = await connect();
      expect(late.closedWith).toEqual([CloseCodes.SERVICE_RESTART, CloseReasons.GATEWAY_RESTARTING]);
      expect(fleet.sessions.count()).toBe(0);
    });
  });

  describe('protocol errors close 1002', () => {
    it('a binary frame', async () => {
      const socket = await connect();
      socket.emit('message', Buffer.from('{}'), true);
      expect(socket.closedWith).toEqual(protocolError);
    });

    it('a frame other than register first', async () => {
      const socket = await connect();
      socket.frame({ type: 'pong', current_load: 0 });
      expect(socket.closedWith).toEqual(protocolError);
    });

    it('a second register', async () => {
      const { socket } = await registered();
      register(socket);
      expect(socket.closedWith).toEqual(protocolError);
    });

    it('a chunk for a request the worker does not own', async () => {
      const { socket, worker } = await registered();
      frames.verdict = 'unknown';
      socket.frame({ type: 'response_chunk', request_id: 'r-9', chunk: 'data' });
      expect(frames.calls).toEqual([['chunk', worker.id, 'r-9']]);
      expect(socket.closedWith).toEqual(protocolError);
    });

    it('response_start without the negotiated feature', async () => {
      const { socket } = await registered();
      socket.frame({ type: 'response_start', request_id: 'r-1', status_code: 200 });
      expect(frames.calls).toEqual([]);
      expect(socket.closedWith).toEqual(protocolError);
    });
  });

  describe('heartbeat', () => {
    it('pings every interval whatever the traffic, and closes when nothing came in for the timeout', async () => {
      const { socket } = await registered();
      clock.advance(15_000);
      expect(socket.ofType('ping')).toEqual([{ type: 'ping', timestamp_unix_ms: clock.now() }]);
      socket.frame({ type: 'pong', current_load: 0 });
      clock.advance(30_000);
      expect(socket.ofType('ping')).toHaveLength(3);
      expect(socket.closedWith).toBeUndefined();
      clock.advance(15_000); // 45 s after the pong
      expect(socket.closedWith).toEqual([CloseCodes.NORMAL, CloseReasons.HEARTBEAT_TIMEOUT]);
      expect(fleet.sessions.count()).toBe(0);
    });
  });

  describe('frames after registration', () => {
    it('go to the dispatcher (chunks, completions, request errors) or the fleet (pong, models_update)', async () => {
      const { socket, worker } = await registered({ features: ['response_start'] });
      const pong = jest.spyOn(fleet, 'onPong');
      socket.frame({ type: 'response_start', request_id: 'r-1', status_code: 200 });
      socket.frame({ type: 'response_chunk', request_id: 'r-1', chunk: 'a' });
      socket.frame({ type: 'response_complete', request_id: 'r-1', status_code: 200 });
      socket.frame({ type: 'error', request_id: 'r-2', code: 'backend_unavailable', message: 'down' });
      socket.frame({ type: 'pong', current_load: 1 });
      socket.frame({ type: 'models_update', models: ['n', 'o'] });
      expect(frames.calls).toEqual([
        ['start', worker.id, 'r-1'],
        ['chunk', worker.id, 'r-1'],
        ['complete', worker.id, 'r-1'],
        ['error', 'r-2', 'backend_unavailable'],
      ]);
      expect(pong).toHaveBeenCalledWith(worker, 1);
      expect(worker.advertisedModels()).toEqual(['n', 'o']);
      expect(socket.closedWith).toBeUndefined();
    });

    it('lifecycle_status reaches the lifecycle reports only when model_lifecycle was negotiated; otherwise it is dropped, not fatal', async () => {
      const status = { type: 'lifecycle_status', task_id: 'load-1', status: 'loading', progress: 0.5 };
      const plain = await registered();
      plain.socket.frame(status);
      expect(reports).toEqual([]);
      expect(plain.socket.closedWith).toBeUndefined();
      const capable = await registered({ features: ['model_lifecycle'] });
      capable.socket.frame(status);
      expect(reports).toEqual([[capable.worker, status]]);
    });
  });

  describe('teardown', () => {
    it('detaches the worker once, however often the socket closes, and stops its timers', async () => {
      const { socket, worker } = await registered();
      const detach = jest.spyOn(fleet, 'detach');
      socket.emit('close');
      socket.emit('close');
      expect(detach).toHaveBeenCalledTimes(1);
      expect(detach).toHaveBeenCalledWith(worker);
      expect(fleet.sessions.get(worker.id)).toBeUndefined();
      // Closed: nothing more is sent, no heartbeat fires.
      worker.channel.send({ type: 'models_refresh', reason: 'test' });
      worker.channel.close(CloseCodes.NORMAL, 'again');
      clock.advance(60_000);
      expect(socket.sent.map((m) => m.type)).toEqual(['register_ack']);
      expect(socket.closedWith).toBeUndefined();
      expect(detach).toHaveBeenCalledTimes(1);
    });
  });
});
