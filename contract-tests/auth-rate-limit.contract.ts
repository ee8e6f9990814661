/**
 * Contract: repeated failed auth attempts are rate-limited by client IP (for the provider they
 * target, see docs/protocol.md) and the blocks expire by themselves. Needs its own gateway (AUTH_FAILURE_LIMIT etc.), so
 * this file always spawns one from dist/ — also when SWITCHBOARD_URL points elsewhere.
 */
import { spawnGateway, SpawnedGateway } from './support/server';
import { ConnectOptions, ScriptedWorker } from './support/worker';
import { sleep, uniqueModel } from './support/util';

const LIMIT = 3;
const BLOCK_SECS = 1.5;
const RATE_LIMITED = { code: 1008, reason: 'worker authentication temporarily rate limited' };

describe('worker auth rate limiting (dedicated gateway)', () => {
  let gw: SpawnedGateway;
  const workers: ScriptedWorker[] = [];

  beforeAll(async () => {
    gw = await spawnGateway({
      label: 'authlimit',
      env: { AUTH_FAILURE_LIMIT: String(LIMIT), AUTH_FAILURE_WINDOW_SECS: String(BLOCK_SECS), AUTH_BLOCK_SECS: String(BLOCK_SECS) },
    });
  });
  afterAll(async () => {
    for (const w of workers) w.terminate();
    await gw?.stop('SIGTERM');
  });

  async function attempt(secret: string, extra: ConnectOptions = {}): Promise<{ code: number; reason: string; acked: boolean }> {
    const w = await ScriptedWorker.connect({ wsUrl: gw.wsUrl, provider: 'local', secret, ...extra }, 'authlimit');
    workers.push(w);
    w.send(w.registerFrame({ models: [uniqueModel('rl')] }));
    const outcome = await w.next('register_ack').then(
      () => ({ code: 0, reason: 'registered', acked: true }),
      async () => {
        const c = await w.closed;
        return { code: c.code, reason: c.reason, acked: false };
      },
    );
    w.terminate();
    return outcome;
  }

  async function exhaust(extra: ConnectOptions = {}): Promise<void> {
    for (let i = 0; i <= LIMIT; i++) {
      const r = await attempt('wrong-secret', extra);
      expect(r.acked).toBe(false);
      expect(r.code).toBe(1008);
    }
  }

  // A blocked address is refused for material the gateway does not know; a secret it knows to be
  // right is still accepted, so one client behind a shared address cannot lock out every worker.
  test('after repeated failures a wrong secret is refused: close 1008 "worker authentication temporarily rate limited"; the right secret still registers', async () => {
    await exhaust();
    const r = await attempt('still-wrong-secret');
    expect({ code: r.code, reason: r.reason }).toEqual(RATE_LIMITED);
    expect(await attempt(gw.env.WORKER_SECRET)).toEqual({ code: 0, reason: 'registered', acked: true });
  });

  test('the block is per client IP: another peer address is not rate limited', async () => {
    await exhaust();
    expect(await attempt('still-wrong-secret')).toEqual({ ...RATE_LIMITED, acked: false });
    const other = await attempt('still-wrong-secret', { localAddress: '127.0.0.2' });
    expect(other.acked).toBe(false);
    expect(other.code).toBe(1008);
    expect(other.reason).not.toBe(RATE_LIMITED.reason);
    expect(await attempt(gw.env.WORKER_SECRET, { localAddress: '127.0.0.2' })).toEqual({ code: 0, reason: 'registered', acked: true });
  });

  test('rate-limit entries expire: after the block period a wrong secret is an ordinary failure again', async () => {
    await exhaust();
    expect(await attempt('still-wrong-secret')).toEqual({ ...RATE_LIMITED, acked: false });
    await sleep(BLOCK_SECS * 1000 * 2 + 500);
    const r = await attempt('still-wrong-secret');
    expect(r.code).toBe(1008);
    expect(r.reason).not.toBe(RATE_LIMITED.reason);
  });
});
