import fc from 'fast-check';
import Redis from 'ioredis';
import { Registry } from 'prom-client';
import { MetricsService } from '../../src/observability/metrics.service';
import { GcraMode, GcraState, gcraStep, RateBucket, RedisRateLimiter, RedisRateLimiterOptions } from '../../src/rate-limit';
import { defineGcraCommand, runGcraScript } from '../../src/rate-limit/redis-script';
import { eventually } from '../support/http';
import { deleteKeys, RecordingLogger, SHARED_REDIS_URL, TestRedisServer, uniquePrefix } from './support';

const MINUTE = 60_000;

/** Fast reconnects and probes, so recovery is quick; the production defaults are larger. */
function limiter(url: string, extra: Partial<RedisRateLimiterOptions> = {}): RedisRateLimiter {
  return new RedisRateLimiter({ url, maxReconnectDelayMs: 100, probeIntervalMs: 100, commandTimeoutMs: 300, connectTimeoutMs: 500, ...extra });
}

async function metricValue(metrics: MetricsService, name: string): Promise<number> {
  const metric = metrics.registry.getSingleMetric(name);
  const { values } = await metric!.get();
  return values[0]?.value ?? 0;
}

describe('RedisRateLimiter against the shared Redis', () => {
  const prefix = uniquePrefix();
  const metrics = new MetricsService(new Registry());
  let a: RedisRateLimiter;
  let b: RedisRateLimiter;
  beforeAll(async () => {
    // Two replicas: separate limiters, separate connections, one Redis.
    a = limiter(SHARED_REDIS_URL, { keyPrefix: prefix, metrics });
    b = limiter(SHARED_REDIS_URL, { keyPrefix: prefix, metrics });
    await eventually(() => a.usingRedis && b.usingRedis);
  });
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await deleteKeys(SHARED_REDIS_URL, prefix);
  });

  it('holds one limit exactly across two replicas: 200 concurrent calls against limit 25 → exactly 25 allowed', async () => {
    const bucket: RateBucket = { key: 'rpm:tenant:acme', limit: 25, windowMs: MINUTE };
    const calls = Array.from({ length: 200 }, (_, i) => (i % 2 === 0 ? a : b).tryConsume(bucket, 1));
    const decisions = await Promise.all(calls);
    expect(decisions.filter((d) => d.allowed)).toHaveLength(25);
    expect(
      decisions
        .filter((d) => d.allowed)
        .map((d) => d.remaining)
        .sort((x, y) => x - y),
    ).toEqual(Array.from({ length: 25 }, (_, i) => i));
    for (const d of decisions.filter((x) => !x.allowed)) {
      expect(d).toMatchObject({ remaining: 0, limit: 25 });
      expect(d.retryAfterMs).toBeGreaterThan(0);
      expect(d.retryAfterMs).toBeLessThanOrEqual(MINUTE / 25);
    }
    expect(await metricValue(metrics, 'switchboard_rate_limiter_fallbacks_total')).toBe(0);
  });

  it('keeps variable costs exact under concurrency (tokens): allowed cost never exceeds the limit', async () => {
    const bucket: RateBucket = { key: 'tpm:key:k1', limit: 1000, windowMs: MINUTE };
    const costs = Array.from({ length: 120 }, (_, i) => 1 + ((i * 37) % 50));
    const started = Date.now();
    const decisions = await Promise.all(costs.map((cost, i) => (i % 2 ? a : b).tryConsume(bucket, cost)));
    const allowed = decisions.reduce((sum, d, i) => sum + (d.allowed ? costs[i] : 0), 0);
    // The bucket refills at 1000/min while the calls run: a few ms of it at most.
    expect(allowed).toBeLessThanOrEqual(1000 + Math.ceil((Date.now() - started) / 60));
    expect(allowed).toBeGreaterThan(900);
    // Whatever was refused did not fit in what was left at that moment.
    decisions.forEach((d, i) => {
      if (!d.allowed) expect(costs[i]).toBeGreaterThan(d.remaining);
    });
  });

  it('a charge through one replica is seen by the other: its cost-0 check is refused until it drains', async () => {
    const bucket: RateBucket = { key: 'tpm:tenant:acme', limit: 100, windowMs: MINUTE };
    expect((await b.tryConsume(bucket, 0)).allowed).toBe(true);
    const charged = await a.charge(bucket, 180);
    expect(charged).toMatchObject({ allowed: false, remaining: 0, charged: 180 });
    const check = await b.tryConsume(bucket, 0);
    expect(check.allowed).toBe(false);
    expect(check.retryAfterMs).toBeGreaterThan(40_000); // 80 tokens over at 0.6 s each: about 48 s
    expect(check.resetAt).toBe(charged.resetAt);
  });

  it('one charge costs at most one window in Redis too: 1e8 tokens on a 100/min bucket refuse for a minute, not 24 h', async () => {
    const bucket: RateBucket = { key: 'tpm:tenant:liar', limit: 100, windowMs: MINUTE };
    const charged = await a.charge(bucket, 100_000_000);
    expect(charged).toMatchObject({ allowed: false, remaining: 0, charged: 200 });
    const check = await b.tryConsume(bucket, 0);
    expect(check.allowed).toBe(false);
    expect(check.retryAfterMs).toBeGreaterThan(MINUTE - 10_000);
    expect(check.retryAfterMs).toBeLessThanOrEqual(MINUTE);
  });

  it('takes the time from Redis, not from the caller: a replica passing a skewed `now` gets the same answer', async () => {
    const bucket: RateBucket = { key: 'rpm:key:skew', limit: 2, windowMs: MINUTE };
    const client = new Redis(SHARED_REDIS_URL);
    try {
      const [secs] = await client.time();
      const redisNow = Number(secs) * 1000;
      const first = await a.tryConsume(bucket, 1, 0); // a caller whose clock says 1970
      const second = await b.tryConsume(bucket, 1, redisNow + 10 * MINUTE); // and one 10 min ahead
      expect(first.allowed && second.allowed).toBe(true);
      // Each unit holds 30 s: the answers line up on Redis time, whatever the callers' clocks say.
      expect(first.resetAt - redisNow).toBeGreaterThanOrEqual(30_000);
      expect(first.resetAt - redisNow).toBeLessThan(35_000);
      expect(second.resetAt - first.resetAt - 30_000).toBeGreaterThanOrEqual(0);
      expect(second.resetAt - first.resetAt - 30_000).toBeLessThan(5000);
      expect((await a.tryConsume(bucket, 1)).allowed).toBe(false);
      // One key per bucket, with a TTL of the time until it is full again (at most the window).
      const ttl = await client.pttl(`${prefix}rpm:key:skew`);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(MINUTE);
    } finally {
      client.disconnect();
    }
  });

  it('runs the same arithmetic in Lua as gcraStep in TypeScript (property, fixed times)', async () => {
    const client = new Redis(SHARED_REDIS_URL);
    defineGcraCommand(client);
    let run = 0;
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.record({ limit: fc.integer({ min: 1, max: 1_000_000 }), windowMs: fc.integer({ min: 1, max: 86_400_000 }) }),
          fc.array(
            fc.record({
              dt: fc.integer({ min: 0, max: 100_000 }),
              cost: fc.integer({ min: 0, max: 2_000_000 }),
              mode: fc.constantFrom<GcraMode[]>('consume', 'charge'),
              windowChange: fc.boolean(),
            }),
            { minLength: 1, maxLength: 12 },
          ),
          async ({ limit, windowMs }, calls) => {
            const key = `${prefix}lua-vs-ts:${run++}`;
            let state: GcraState | undefined;
            let now = Date.UTC(2026, 10, 22);
            for (const call of calls) {
              now += call.dt;
              // Sometimes the window changes (an operator edits a limit): both must rescale alike.
              const bucket: RateBucket = { key, limit, windowMs: call.windowChange ? windowMs * 2 : windowMs };
              const ts = gcraStep(state, bucket, call.cost, now, call.mode);
              if (ts.next) state = ts.next;
              const lua = await runGcraScript(client, key, call.mode, bucket, call.cost, now);
              expect(lua).toEqual(ts.decision);
            }
          },
        ),
        { numRuns: 60 },
      );
    } finally {
      client.disconnect();
    }
  });
});

describe('RedisRateLimiter when Redis fails', () => {
  let server: TestRedisServer;
  const open: RedisRateLimiter[] = [];
  const track = (l: RedisRateLimiter) => (open.push(l), l);
  beforeAll(async () => {
    server = await TestRedisServer.start();
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((l) => l.close()));
    await server.start(); // each test leaves it running
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('answers locally at once while nothing listens, then switches to Redis when it appears', async () => {
    const port = server.port;
    await server.stop();
    const logger = new RecordingLogger();
    const metrics = new MetricsService(new Registry());
    const l = track(limiter(`redis://127.0.0.1:${port}`, { logger, metrics }));
    const bucket: RateBucket = { key: 'rpm:tenant:boot', limit: 3, windowMs: MINUTE };
    const decisions = await Promise.all(Array.from({ length: 5 }, () => l.tryConsume(bucket, 1)));
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false, false]);
    await eventually(() => logger.lines.length > 0);
    // Many reconnect attempts fail meanwhile, and many calls are answered: one line only.
    await Promise.all(Array.from({ length: 20 }, () => l.tryConsume(bucket, 1)));
    expect(l.health()).toMatchObject({ status: 'down', url: `127.0.0.1:${port}` });
    expect(logger.lines).toEqual([{ level: 'warn', message: expect.stringMatching(/is unavailable \(.*ECONNREFUSED.*\).*in memory/) }]);
    expect(await metricValue(metrics, 'switchboard_rate_limiter_fallbacks_total')).toBe(25);
    expect(await metricValue(metrics, 'switchboard_redis_up')).toBe(0);

    await server.start();
    await eventually(() => l.usingRedis);
    expect(l.health()).toMatchObject({ status: 'ok', since: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) });
    expect(logger.lines.map((x) => x.level)).toEqual(['warn', 'log']);
    expect(await metricValue(metrics, 'switchboard_redis_up')).toBe(1);
    // Decisions come from Redis now, where the bucket is fresh.
    expect(await l.tryConsume(bucket, 1)).toMatchObject({ allowed: true, remaining: 2 });
  });

  it('keeps answering when the server dies mid-run, counts local decisions, and goes back to Redis after a restart', async () => {
    const logger = new RecordingLogger();
    const metrics = new MetricsService(new Registry());
    const a = track(limiter(server.url, { logger, metrics }));
    const b = track(limiter(server.url));
    await eventually(() => a.usingRedis && b.usingRedis);
    expect(a.health().status).toBe('ok');
    expect(logger.lines).toEqual([{ level: 'log', message: expect.stringContaining(`shared through Redis at 127.0.0.1:${server.port}`) }]);
    const bucket: RateBucket = { key: 'rpm:tenant:crash', limit: 1000, windowMs: MINUTE };

    // Calls in flight while the server is killed: every one of them resolves with a decision.
    const inFlight = Array.from({ length: 100 }, () => a.tryConsume(bucket, 1));
    const stopped = server.stop();
    const during = await Promise.all([...inFlight, ...Array.from({ length: 50 }, () => a.tryConsume(bucket, 1))]);
    await stopped;
    expect(during.every((d) => typeof d.allowed === 'boolean' && d.limit === 1000)).toBe(true);
    const after = await Promise.all(Array.from({ length: 30 }, () => a.charge(bucket, 1)));
    expect(after.every((d) => d.allowed)).toBe(true);

    await eventually(() => a.health().status === 'down' && b.health().status === 'down');
    expect(a.health().since).toEqual(expect.stringMatching(/^\d{4}-\d\d-\d\dT/));
    expect(logger.lines.filter((x) => x.level === 'warn')).toHaveLength(1);
    expect(await metricValue(metrics, 'switchboard_rate_limiter_fallbacks_total')).toBeGreaterThanOrEqual(30);
    expect(await metricValue(metrics, 'switchboard_redis_up')).toBe(0);
    // Local means per replica: B has not seen what A took while Redis was away.
    expect((await b.tryConsume(bucket, 0)).remaining).toBe(1000);

    await server.start();
    await eventually(() => a.usingRedis && b.usingRedis);
    expect(a.health().status).toBe('ok');
    expect(logger.lines.map((x) => x.level)).toEqual(['log', 'warn', 'log']);
    expect(logger.lines[2].message).toMatch(/answers again/);
    expect(await metricValue(metrics, 'switchboard_redis_up')).toBe(1);
    // Proof that decisions come from Redis again: what A takes, B sees (B's memory never saw it).
    const shared: RateBucket = { key: 'rpm:tenant:after-restart', limit: 3, windowMs: MINUTE };
    const fallbacksBefore = await metricValue(metrics, 'switchboard_rate_limiter_fallbacks_total');
    expect((await Promise.all([1, 2, 3].map(() => a.tryConsume(shared, 1)))).every((d) => d.allowed)).toBe(true);
    expect(await b.tryConsume(shared, 1)).toMatchObject({ allowed: false, remaining: 0 });
    expect(await metricValue(metrics, 'switchboard_rate_limiter_fallbacks_total')).toBe(fallbacksBefore);
  });

  it('falls back when a connected server stops answering (command timeout), and recovers when it resumes', async () => {
    const logger = new RecordingLogger();
    const l = track(limiter(server.url, { logger }));
    await eventually(() => l.usingRedis);
    const bucket: RateBucket = { key: 'rpm:tenant:frozen', limit: 2, windowMs: MINUTE };
    server.pause();
    try {
      // The first call waits for the command timeout, then answers locally; later ones at once.
      const first = await l.tryConsume(bucket, 1);
      expect(first.allowed).toBe(true);
      expect(l.health().status).toBe('down');
      expect(logger.lines.at(-1)).toEqual({ level: 'warn', message: expect.stringMatching(/timed out/i) });
      expect((await l.tryConsume(bucket, 1)).allowed).toBe(true);
      expect((await l.tryConsume(bucket, 1)).allowed).toBe(false);
    } finally {
      server.resume();
    }
    await eventually(() => l.usingRedis);
    expect(logger.lines.map((x) => x.level)).toEqual(['log', 'warn', 'log']);
  });

  it('closes cleanly whether Redis is up or down, and says nothing more afterwards', async () => {
    const logger = new RecordingLogger();
    const up = track(limiter(server.url, { logger }));
    await eventually(() => up.usingRedis);
    await up.close();
    expect(up.client.status).toBe('end');
    await server.stop();
    const down = track(limiter(server.url, { logger }));
    await eventually(() => down.health().status === 'down' && logger.lines.length === 2);
    await down.close();
    // Between reconnect attempts there is no socket: close cancels the next attempt.
    expect(['end', 'reconnecting']).toContain(down.client.status);
    expect(logger.lines.map((x) => x.level)).toEqual(['log', 'warn']);
    // After close, calls still answer (locally) rather than throw.
    expect((await down.tryConsume({ key: 'x', limit: 1, windowMs: 1000 }, 1)).allowed).toBe(true);
  });
});
