import { RateLimiter } from '../../src/rate-limit';
import { parsePrometheusText } from '../observability/prometheus-text';
import { startGateway, TestGateway } from '../support/gateway';
import { eventually } from '../support/http';
import { TestRedisServer } from './support';

const PASSWORD = 'redis-pw-never-shown';

async function health(gw: TestGateway): Promise<{ text: string; body: any }> {
  const res = await fetch(`${gw.url}/health`);
  expect(res.status).toBe(200);
  const text = await res.text();
  return { text, body: JSON.parse(text) };
}

/** Polls GET /health until `redis.status` is `status`, and returns that answer. */
async function healthOnceRedisIs(gw: TestGateway, status: string): Promise<{ text: string; body: any }> {
  let found: { text: string; body: any } | undefined;
  await eventually(async () => {
    const h = await health(gw);
    if (h.body.redis?.status === status) found = h;
    return found !== undefined;
  });
  return found!;
}

async function metric(gw: TestGateway, name: string): Promise<number | undefined> {
  const families = parsePrometheusText(await (await fetch(`${gw.url}/metrics`)).text());
  return families.get(name)?.samples[0]?.value;
}

describe('the gateway with REDIS_URL', () => {
  let server: TestRedisServer;
  let gw: TestGateway;
  beforeAll(async () => {
    server = await TestRedisServer.start({ password: PASSWORD });
    gw = await startGateway({ REDIS_URL: server.url });
  });
  afterAll(async () => {
    await gw?.close();
    await server?.stop();
  });

  it('shows Redis in /health (host:port only), then down when it stops, without turning unready', async () => {
    const up = await healthOnceRedisIs(gw, 'ok');
    expect(up.body.redis).toEqual({ status: 'ok', url: `127.0.0.1:${server.port}`, since: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/) });
    expect(up.text).not.toContain(PASSWORD);
    expect(up.body.status).toBe('healthy');
    expect(await metric(gw, 'switchboard_redis_up')).toBe(1);

    // The port the admission wiring will use: the Redis limiter, deciding through Redis.
    const limiter = gw.app.get(RateLimiter);
    expect(limiter.synchronous).toBe(false);
    expect(await limiter.tryConsume({ key: 'rpm:tenant:gw', limit: 1, windowMs: 60_000 }, 1)).toMatchObject({ allowed: true });

    await server.stop();
    const down = await healthOnceRedisIs(gw, 'down');
    expect(down.body.redis.url).toBe(`127.0.0.1:${server.port}`);
    expect(Date.parse(down.body.redis.since)).toBeGreaterThanOrEqual(Date.parse(up.body.redis.since));
    expect(down.body.status).toBe('healthy');
    expect(down.text).not.toContain(PASSWORD);
    expect(await metric(gw, 'switchboard_redis_up')).toBe(0);

    // Still serving: ready, and the limiter answers (locally, counted).
    const ready = await fetch(`${gw.url}/health/ready`);
    expect(ready.status).toBe(200);
    expect(((await ready.json()) as { status: string }).status).toBe('ok');
    expect(await limiter.tryConsume({ key: 'rpm:tenant:gw', limit: 1, windowMs: 60_000 }, 1)).toMatchObject({ allowed: true });
    expect(await metric(gw, 'switchboard_rate_limiter_fallbacks_total')).toBeGreaterThanOrEqual(1);
  });
});

describe('the gateway without REDIS_URL', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway();
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('limits in memory, synchronously, and /health has no redis field', async () => {
    const limiter = gw.app.get(RateLimiter);
    expect(limiter.synchronous).toBe(true);
    const decision = limiter.tryConsume({ key: 'rpm:tenant:mem', limit: 1, windowMs: 60_000 }, 1);
    expect(decision).toMatchObject({ allowed: true, remaining: 0 });
    expect(limiter.health()).toEqual({ status: 'disabled' });
    const { body } = await health(gw);
    expect(body.redis).toBeUndefined();
    expect(await metric(gw, 'switchboard_redis_up')).toBe(0);
  });
});
