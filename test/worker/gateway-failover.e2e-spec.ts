import { CloseCodes } from '../../src/protocol';
import { connectUrls, workerConfig } from '../../src/worker/config';
import { daemonClock } from '../../src/worker/clock';
import { GatewayLink, LinkHooks } from '../../src/worker/link/gateway-link';
import { ReconnectPolicy } from '../../src/worker/link/reconnect-policy';
import { FakeGateway } from './support/fake-gateway';
import { RecordingLogger } from './support/recording-logger';
import { SECRET } from './support/harness';

/**
 * `--proxy-url a,b`: the worker's link to several gateway replicas, over real WebSockets. It
 * reacts the way the daemon does (register on open, reconnect with backoff on a close).
 */
describe('worker link with several gateways (--proxy-url a,b)', () => {
  const gateways: FakeGateway[] = [];
  /** Each test's link; its hooks only ever touch their own run, so a late close cannot reach the next test. */
  const runs: Array<{ link?: GatewayLink; stopping: boolean }> = [];

  async function gateway(): Promise<FakeGateway> {
    const g = new FakeGateway({ secret: SECRET });
    await g.start();
    gateways.push(g);
    return g;
  }

  function connect(proxyUrls: string[]): { log: RecordingLogger } {
    const log = new RecordingLogger();
    const run: { link?: GatewayLink; stopping: boolean } = { stopping: false };
    runs.push(run);
    const config = workerConfig({ workerSecret: SECRET, proxyUrls, provider: 'local' });
    const policy = new ReconnectPolicy(
      {
        reconnectMinMs: 20,
        reconnectMaxMs: 200,
        stableSessionMs: 30_000,
        restartReconnectMs: 20,
        restartReconnectMaxMs: 100,
        restartWindowMs: 10_000,
        cordonRetryMs: 20,
        cordonRetryMaxMs: 40,
      },
      daemonClock,
      log,
    );
    const hooks: LinkHooks = {
      opened: (session) => session.ws.send(JSON.stringify({ type: 'register', worker_name: 'w1', models: ['llama3'], max_concurrent: 1, protocol_version: 2 })),
      message: () => undefined,
      ended: () => undefined,
      disconnected: (_s, code) => {
        if (run.stopping) return;
        if (code === CloseCodes.TRY_AGAIN_LATER) run.link?.scheduleCordonRetry();
        else run.link?.scheduleReconnect();
      },
      reconnectScheduled: () => undefined,
      reconnect: () => {
        if (!run.stopping) run.link?.dial();
      },
      stopping: () => run.stopping,
    };
    const link = new GatewayLink(
      {
        url: connectUrls(config)[0],
        urls: connectUrls(config),
        workerSecret: SECRET,
        heartbeatIntervalMs: 15_000,
        proxy: {},
        tls: { rejectUnauthorized: true },
      },
      policy,
      hooks,
      daemonClock,
      log,
    );
    run.link = link;
    link.dial();
    return { log };
  }

  afterEach(async () => {
    for (const run of runs.splice(0)) {
      run.stopping = true;
      run.link?.cancelReconnect();
      run.link?.current?.ws.terminate();
    }
    await Promise.all(gateways.splice(0).map((g) => g.stop()));
  });

  it('registers at the first gateway, and at the second once the first is killed', async () => {
    const a = await gateway();
    const b = await gateway();
    const { log } = connect([a.url, b.url]);
    const first = await a.connection(1);
    expect((await first.next('register')).worker_name).toBe('w1');
    expect(b.attempts).toHaveLength(0);

    await a.stop();
    const second = await b.connection(1);
    expect((await second.next('register')).worker_name).toBe('w1');
    expect(log.lines.some((e) => e.msg === 'moving to the next gateway' && String(e.fields?.url).startsWith(b.url.replace('http', 'ws')))).toBe(true);
  });

  it('a refused dial moves on too, round robin: back to the first when the second goes', async () => {
    const a = await gateway();
    const b = await gateway();
    const deadPort = a.port;
    await a.stop();
    // a refuses (nothing listens): the worker lands on b.
    connect([`http://127.0.0.1:${deadPort}`, b.url]);
    await b.connection(1);
    // a comes back on its port, b goes: the worker returns to a.
    const a2 = new FakeGateway({ secret: SECRET });
    await a2.start(deadPort);
    gateways.push(a2);
    await b.stop();
    expect((await (await a2.connection(1)).next('register')).models).toEqual(['llama3']);
  });

  it('one URL: every reconnect goes to that URL, as before', async () => {
    const a = await gateway();
    connect([a.url]);
    const first = await a.connection(1);
    await first.close(CloseCodes.SERVICE_RESTART, 'restarting');
    await a.connection(2);
    expect(a.attempts.map((t) => t.url)).toEqual([a.attempts[0].url, a.attempts[0].url]);
  });
});
