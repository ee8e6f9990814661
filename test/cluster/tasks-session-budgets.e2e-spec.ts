import Redis from 'ioredis';
import { systemClock } from '../../src/common/clock';
import { RedisSessionBudgets } from '../../src/tasks/redis-session-budgets';
import { TaskClusterRedis } from '../../src/tasks/task-cluster-redis';
import { TestRedisServer, uniquePrefix } from '../rate-limit/support';
import { eventually } from '../support/http';

const TIMEOUT_MS = 200;
const TTL_MS = 60_000;
const WAIT = 10_000;

/** RedisSessionBudgets on a real redis-server: two replicas' stores, the shared totals, Redis frozen and lost. */
describe('RedisSessionBudgets (real Redis)', () => {
  let redis: TestRedisServer;
  let prefix: string;
  const opened: Array<{ store: RedisSessionBudgets; conn: TaskClusterRedis }> = [];
  let reader: Redis;

  const replica = (name: string) => {
    const conn = new TaskClusterRedis(redis.url, TIMEOUT_MS);
    const store = new RedisSessionBudgets({ client: conn.client, clock: systemClock, ttlMs: TTL_MS, instance: name, flushMs: 10, retryMs: 50, prefix });
    opened.push({ store, conn });
    return store;
  };
  const stored = async (key: string) => {
    const h = await reader.hgetall(`${prefix}session:${key}`);
    return { tokens: Number(h.tokens ?? 0), ms: Number(h.ms ?? 0) };
  };
  const ready = (store: RedisSessionBudgets) => eventually(async () => (await store.refresh('probe', Date.now()), true), WAIT);

  beforeAll(async () => {
    redis = await TestRedisServer.start();
    reader = new Redis(redis.url);
  });
  beforeEach(() => {
    prefix = uniquePrefix();
  });
  afterEach(async () => {
    for (const { store, conn } of opened.splice(0)) {
      await store.close();
      await conn.close();
    }
  });
  afterAll(async () => {
    reader.disconnect();
    await redis.stop();
  });

  it("adds up what every replica spends; each sees the session's totals after a refresh", async () => {
    const a = replica('gw-a/1');
    const b = replica('gw-b/1');
    await ready(a);
    await ready(b);
    const now = Date.now();
    a.addTokens('s1', 10, now);
    a.addTime('s1', 1500, now);
    b.addTokens('s1', 5, now);
    b.addTokens('s1', -2, now);
    // Local reads never wait on Redis: each sees its own spending at once.
    expect(a.usage('s1')).toEqual({ tokens: 10, timeMs: 1500 });
    expect(b.usage('s1')).toEqual({ tokens: 3, timeMs: 0 });
    await eventually(async () => (await stored('s1')).tokens === 13, WAIT);
    await a.refresh('s1', Date.now());
    await b.refresh('s1', Date.now());
    expect(a.usage('s1')).toEqual({ tokens: 13, timeMs: 1500 });
    expect(b.usage('s1')).toEqual({ tokens: 13, timeMs: 1500 });
    expect(await stored('s1')).toEqual({ tokens: 13, ms: 1500 });
    // Another session is apart; the key expires with the session's TTL.
    expect(a.usage('s2')).toEqual({ tokens: 0, timeMs: 0 });
    const ttl = await reader.pttl(`${prefix}session:s1`);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(TTL_MS);
  });

  it('Redis frozen: spending counts locally, then reaches Redis exactly once (a batch whose reply was lost is not applied twice)', async () => {
    const a = replica('gw-a/2');
    await ready(a);
    a.addTokens('s', 7, Date.now());
    await eventually(async () => (await stored('s')).tokens === 7, WAIT);
    redis.pause();
    try {
      a.addTokens('s', 5, Date.now());
      // The batch goes out, Redis takes it into its socket buffer but answers nothing before the timeout.
      await expect(a.refresh('s', Date.now())).resolves.toBeUndefined();
      a.addTokens('s', 4, Date.now());
      expect(a.usage('s').tokens).toBe(16);
    } finally {
      redis.resume();
    }
    // On thaw Redis runs the first batch; the store retries it (same sequence) and then sends the rest.
    await eventually(async () => (await stored('s')).tokens >= 16, WAIT, 'everything sent');
    await a.refresh('s', Date.now());
    expect(await stored('s')).toEqual({ tokens: 16, ms: 0 });
    expect(a.usage('s').tokens).toBe(16);
  });

  it('Redis lost: no error reaches the caller, usage is local, and spending is sent once Redis is back', async () => {
    const a = replica('gw-a/3');
    await ready(a);
    await redis.stop();
    a.addTokens('lost', 9, Date.now());
    await expect(a.refresh('lost', Date.now())).resolves.toBeUndefined();
    expect(a.usage('lost')).toEqual({ tokens: 9, timeMs: 0 });
    await redis.start();
    await eventually(async () => (await stored('lost')).tokens === 9, WAIT, 'sent after recovery');
    await a.refresh('lost', Date.now());
    expect(a.usage('lost')).toEqual({ tokens: 9, timeMs: 0 });
    expect(await stored('lost')).toEqual({ tokens: 9, ms: 0 });
  });
});
