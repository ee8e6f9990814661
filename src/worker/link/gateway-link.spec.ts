import WebSocket from 'ws';
import { CloseCodes, ServerToWorkerMessage } from '../../protocol';
import { FakeClock } from '../../../test/support/fake-clock';
import { FakeSocket } from '../../../test/worker/support/fake-socket';
import { RecordingLogger } from '../../../test/worker/support/recording-logger';
import { GatewayLink, LinkHooks } from './gateway-link';
import { ReconnectDelay, ReconnectPolicy } from './reconnect-policy';
import { LinkSession } from './session';

const HEARTBEAT_MS = 1_000;

function setup(opts: { throwOnDial?: boolean } = {}) {
  const clock = new FakeClock();
  const log = new RecordingLogger();
  const sockets: FakeSocket[] = [];
  const events: string[] = [];
  const messages: ServerToWorkerMessage[] = [];
  const delays: ReconnectDelay[] = [];
  const policy = new ReconnectPolicy(
    {
      reconnectMinMs: 1_000,
      reconnectMaxMs: 8_000,
      stableSessionMs: 30_000,
      restartReconnectMs: 100,
      restartReconnectMaxMs: 300,
      restartWindowMs: 10_000,
      cordonRetryMs: 30_000,
      cordonRetryMaxMs: 60_000,
      random: () => 0,
    },
    clock,
    log,
  );
  // eslint-disable-next-line prefer-const
  let link: GatewayLink;
  const hooks: LinkHooks = {
    opened: (session) => {
      events.push('opened');
      link.armIdleTimer(session);
    },
    message: (_s, m) => messages.push(m),
    ended: () => events.push('ended'),
    disconnected: (_s, code) => {
      events.push(`disconnected ${code}`);
      if (code === CloseCodes.TRY_AGAIN_LATER) link.scheduleCordonRetry();
      else link.scheduleReconnect();
    },
    reconnectScheduled: (d) => delays.push(d),
    reconnect: () => {
      events.push('reconnect');
      link.dial();
    },
    stopping: () => false,
  };
  link = new GatewayLink(
    { url: 'ws://gateway.test/v1/worker/connect', workerSecret: 's3cret', heartbeatIntervalMs: HEARTBEAT_MS, proxy: {}, tls: { rejectUnauthorized: true } },
    policy,
    hooks,
    clock,
    log,
    (url, options) => {
      if (opts.throwOnDial) throw new Error('Invalid character in header content ["x-worker-secret"]');
      const s = new FakeSocket(url, options);
      sockets.push(s);
      return s.asWebSocket();
    },
  );
  const last = () => sockets[sockets.length - 1];
  return { clock, log, link, sockets, last, events, messages, delays };
}

describe('GatewayLink (fake clock)', () => {
  it('dials with the worker secret and hands parsed frames to the daemon', () => {
    const t = setup();
    t.link.dial();
    expect(t.last().options.headers).toMatchObject({ 'x-worker-secret': 's3cret', 'user-agent': 'switchboard-worker' });
    t.last().opened();
    expect(t.link.current).toBeInstanceOf(LinkSession);
    expect(t.link.current?.openedAt).toBe(t.clock.now());
    t.last().frame({ type: 'ping', timestamp_unix_ms: 5 });
    expect(t.messages).toEqual([{ type: 'ping', timestamp_unix_ms: 5 }]);
  });

  it('terminates a link that stays silent for three heartbeat intervals, and every frame or ping re-arms the watchdog', () => {
    const t = setup();
    t.link.dial();
    t.last().opened();
    t.clock.advance(2_999);
    t.last().emit('ping');
    t.clock.advance(2_999);
    t.last().frame({ type: 'ping' });
    t.clock.advance(2_999);
    expect(t.last().terminated).toBe(false);
    t.clock.advance(1);
    expect(t.last().terminated).toBe(true);
    expect(t.log.messages('warn')).toContain('nothing heard from the gateway; reconnecting');
    expect(t.events).toEqual(['opened', 'ended', 'disconnected 1006']);
    expect(t.link.current).toBeUndefined();
  });

  it('reconnects with exponential backoff, and only when the delay has passed on the clock', () => {
    const t = setup();
    t.link.dial();
    t.last().closed(1006, '');
    expect(t.delays.map((d) => d.delayMs)).toEqual([1_000]);
    t.clock.advance(999);
    expect(t.sockets).toHaveLength(1);
    t.clock.advance(1);
    expect(t.sockets).toHaveLength(2);
    t.last().closed(1006, '');
    t.clock.advance(2_000);
    t.last().closed(1006, '');
    t.clock.advance(4_000);
    t.last().closed(1006, '');
    t.clock.advance(8_000);
    t.last().closed(1006, '');
    expect(t.delays.map((d) => [d.delayMs, d.attempt])).toEqual([
      [1_000, 1],
      [2_000, 2],
      [4_000, 3],
      [8_000, 4],
      [8_000, 5],
    ]);
  });

  it('starts the backoff over after a session that lasted stableSessionMs', () => {
    const t = setup();
    t.link.dial();
    t.last().closed(1006, '');
    t.clock.advance(1_000);
    t.last().closed(1006, '');
    t.clock.advance(2_000);
    t.last().opened();
    for (let i = 0; i < 15; i++) {
      t.clock.advance(2_000);
      t.last().frame({ type: 'ping' }); // keeps the watchdog quiet
    }
    t.last().closed(1006, '');
    expect(t.delays.map((d) => d.delayMs)).toEqual([1_000, 2_000, 1_000]);
  });

  it('retries a restarting gateway (1012) at the short interval until the restart window ends', () => {
    const t = setup();
    t.link.dial();
    t.last().opened();
    t.last().closed(CloseCodes.SERVICE_RESTART, 'service restart');
    expect(t.delays[0]).toEqual({ delayMs: 100, attempt: 1, restarting: true });
    // The gateway does not come back: the short delays grow to their cap, then the window ends.
    for (let i = 0; i < 40; i++) {
      t.clock.advance(t.delays[t.delays.length - 1].delayMs);
      t.last().closed(1006, '');
    }
    const after = t.delays.filter((d) => !d.restarting);
    expect(t.delays.filter((d) => d.restarting).every((d) => d.delayMs <= 300)).toBe(true);
    expect(after[0]).toEqual({ delayMs: 1_000, attempt: 1, restarting: false });
    expect(t.log.messages('warn')).toContain('the restarting gateway has not come back; falling back to the normal reconnect backoff');
  });

  it('waits the long cordon interval after 1013, counting refusals until registered', () => {
    const t = setup();
    t.link.dial();
    t.last().closed(CloseCodes.TRY_AGAIN_LATER, 'cordoned');
    t.clock.advance(30_000);
    t.last().closed(CloseCodes.TRY_AGAIN_LATER, 'cordoned');
    expect(t.delays).toEqual([
      { delayMs: 30_000, attempt: 1, restarting: false },
      { delayMs: 30_000, attempt: 2, restarting: false },
    ]);
    t.clock.advance(29_999);
    expect(t.sockets).toHaveLength(2);
    t.clock.advance(1);
    t.last().opened();
    t.link.registered();
    t.last().closed(CloseCodes.TRY_AGAIN_LATER, 'cordoned');
    expect(t.delays[2].attempt).toBe(1);
  });

  it('closes with 1002 on an unparseable frame and terminates if the gateway never answers the close', () => {
    const t = setup();
    t.link.dial();
    t.last().opened();
    t.last().frame('{not json');
    expect(t.last().closeCalls).toEqual([{ code: 1002, reason: 'unparseable server frame' }]);
    expect(t.messages).toEqual([]);
    t.clock.advance(2_999);
    expect(t.last().terminated).toBe(false);
    t.clock.advance(1);
    expect(t.last().terminated).toBe(true);
  });

  it('schedules a reconnect when the socket cannot even be created', () => {
    const t = setup({ throwOnDial: true });
    t.link.dial();
    expect(t.log.messages('error')).toContain('cannot open the gateway connection');
    expect(t.delays).toHaveLength(1);
    expect(t.link.current).toBeUndefined();
  });

  it('cancelReconnect stops a pending dial', () => {
    const t = setup();
    t.link.dial();
    t.last().closed(1006, '');
    t.link.cancelReconnect();
    t.clock.advance(60_000);
    expect(t.sockets).toHaveLength(1);
    expect(t.clock.pendingTimers()).toBe(0);
  });

  it('session timers end with the link', () => {
    const t = setup();
    t.link.dial();
    t.last().opened();
    const session = t.link.current as LinkSession;
    const fired: string[] = [];
    session.setTimer('poll', () => fired.push('poll'), 500);
    session.setTimer('drain', () => fired.push('drain'), 500);
    expect(session.open).toBe(true);
    t.last().closed(1000, '');
    t.link.cancelReconnect();
    t.clock.advance(10_000);
    expect(fired).toEqual([]);
    expect(session.open).toBe(false);
    expect(session.operations.signal.aborted).toBe(true);
    expect(t.last().readyState).toBe(WebSocket.CLOSED);
  });
});
