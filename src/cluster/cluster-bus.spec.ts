import Redis from 'ioredis';
import { TestRedisServer } from '../../test/rate-limit/support';
import { parseBusMessage } from './cluster-bus.port';
import { LocalClusterBus } from './local-cluster-bus';
import { RedisClusterBus } from './redis-cluster-bus';

/** Resolves once `check` holds (polled every 20 ms), fails after `ms`. */
async function until(check: () => boolean, ms = 5000, what = 'condition'): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * The kept batch reached a receiver, and the last it saw is the whole batch in order. The batch is
 * sent twice (once when Redis is back, once more after the longest reconnect delay): a receiver
 * that subscribed again in the middle of the first sending sees its tail first, then all of it.
 */
async function batchDelivered(seen: unknown[], batch: unknown[]): Promise<void> {
  const inOrder = () => JSON.stringify(seen.slice(-batch.length)) === JSON.stringify(batch);
  await until(inOrder, 10_000, 'the kept batch, in order').catch((e: Error) => {
    throw new Error(`${e.message}; saw ${JSON.stringify(seen)}`);
  });
  expect(seen.every((m) => batch.includes(m))).toBe(true);
}

/** The bus's publishing connection (private: the tests watch its state). */
const pubOf = (bus: RedisClusterBus) => (bus as unknown as { pub: Redis }).pub;

/** The `data` of each bus message among publish calls. */
function dataOf(calls: unknown[][]): unknown[] {
  return calls.map(([, raw]) => (JSON.parse(String(raw)) as { data: unknown }).data);
}

/** The topics the bus published, in call order (the spy sees every publish of every Redis client). */
function sentBy(publish: jest.SpyInstance): string[] {
  return publish.mock.calls.map(([, raw]) => (JSON.parse(String(raw)) as { topic: string }).topic);
}

describe('parseBusMessage', () => {
  it('reads a well-formed message and drops anything else', () => {
    expect(parseBusMessage('{"from":"a","topic":"t","data":{"id":1}}')).toEqual({ from: 'a', topic: 't', data: { id: 1 } });
    for (const raw of ['', 'nope', 'null', '42', '[]', '{"topic":"t"}', '{"from":"a"}', '{"from":"","topic":"t"}', '{"from":1,"topic":"t"}']) {
      expect(parseBusMessage(raw)).toBeUndefined();
    }
  });
});

describe('LocalClusterBus', () => {
  it('tells nobody and never calls a handler', async () => {
    const bus = new LocalClusterBus();
    const seen: unknown[] = [];
    bus.subscribe('t', (d) => void seen.push(d));
    bus.onResync(() => void seen.push('resync'));
    bus.publish('t', { x: 1 });
    await bus.close();
    expect(bus.enabled).toBe(false);
    expect(seen).toEqual([]);
  });
});

describe('RedisClusterBus (real redis-server)', () => {
  let redis: TestRedisServer;
  const buses: RedisClusterBus[] = [];
  const bus = (replicaId: string, maxReconnectDelayMs = 100) => {
    const b = new RedisClusterBus({ url: redis.url, replicaId, commandTimeoutMs: 200, maxReconnectDelayMs });
    buses.push(b);
    return b;
  };
  /** Resolves once `b` receives its own probe: it is subscribed. */
  const subscribed = async (b: RedisClusterBus) => {
    const probe = new Redis(redis.url);
    let got = false;
    const off = b.subscribe('probe', () => void (got = true));
    try {
      await until(
        () => {
          void probe.publish(b.channel, JSON.stringify({ from: 'probe', topic: 'probe', data: null })).catch(() => undefined);
          return got;
        },
        5000,
        'subscription',
      );
    } finally {
      off();
      probe.disconnect();
    }
  };

  /** Replica a ready to publish, and what replica b receives on topic 't'. */
  const sender = async () => {
    const a = bus('a');
    const b = bus('b');
    await Promise.all([a, b].map(subscribed));
    const seen: unknown[] = [];
    b.subscribe('t', (d) => void seen.push(d));
    await until(() => pubOf(a).status === 'ready', 5000, 'publisher ready');
    return { a, b, seen };
  };

  beforeAll(async () => {
    redis = await TestRedisServer.start();
  });
  afterEach(async () => {
    await Promise.all(buses.splice(0).map((b) => b.close()));
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it('delivers to the other replicas, never back to the sender, by topic', async () => {
    const a = bus('a');
    const b = bus('b');
    const c = bus('c');
    await Promise.all([a, b, c].map(subscribed));
    const seen: Array<[string, unknown, string]> = [];
    for (const [id, x] of [
      ['a', a],
      ['b', b],
      ['c', c],
    ] as const) {
      x.subscribe('key', (data, from) => void seen.push([id, data, from]));
    }
    b.subscribe('other', () => void seen.push(['b', 'other', '?']));
    a.publish('key', { id: 'k1' });
    await until(() => seen.length >= 2);
    await new Promise((r) => setTimeout(r, 100)); // nothing more arrives (no echo to a, nothing on 'other')
    expect(seen.sort()).toEqual([
      ['b', { id: 'k1' }, 'a'],
      ['c', { id: 'k1' }, 'a'],
    ]);
  });

  it('drops malformed messages and survives a throwing handler', async () => {
    const a = bus('a');
    await subscribed(a);
    const seen: unknown[] = [];
    a.subscribe('t', () => {
      throw new Error('handler bug');
    });
    a.subscribe('t', async () => {
      throw new Error('async handler bug');
    });
    a.subscribe('t', (d) => void seen.push(d));
    const raw = new Redis(redis.url);
    try {
      for (const m of ['not json', '{"topic":"t"}', 'null']) await raw.publish(a.channel, m);
      await raw.publish(a.channel, JSON.stringify({ from: 'z', topic: 't', data: 'ok' }));
    } finally {
      raw.disconnect();
    }
    await until(() => seen.length === 1);
    expect(seen).toEqual(['ok']);
  });

  it('publish never throws; while Redis is down messages are kept, sent again when it is back, and the others resync', async () => {
    const a = bus('a');
    const b = bus('b');
    await Promise.all([a, b].map(subscribed));
    const seen: unknown[] = [];
    let resyncs = 0;
    b.subscribe('t', (d) => void seen.push(d));
    b.onResync(() => void resyncs++);
    await redis.stop();
    expect(() => a.publish('t', 'while-down-1')).not.toThrow();
    a.publish('t', 'while-down-2');
    a.publish('t', 1n); // not JSON: logged and dropped, never thrown
    // Kept at once, or once the send fails (the lost connection may not be noticed yet).
    await until(() => a.pendingCount() === 2, 5000, 'messages kept');
    await redis.start();
    await until(() => resyncs === 1, 10_000, 'resync after the outage');
    await batchDelivered(seen, ['while-down-1', 'while-down-2']);
    expect(a.pendingCount()).toBe(0);
  });

  it('a send under way when the connection drops goes back before the messages kept after it', async () => {
    const { a, seen } = await sender();
    // The first send is still on the wire when the loss is noticed: it fails only after the next
    // message has been kept (what CI once saw, by timing; here by holding that send's answer).
    let failFirst!: (e: Error) => void;
    const publish = jest.spyOn(Redis.prototype, 'publish');
    publish.mockImplementationOnce(() => new Promise<number>((_, reject) => (failFirst = reject)) as never);
    try {
      a.publish('t', 'first');
      await redis.stop();
      await until(() => pubOf(a).status !== 'ready', 5000, 'loss noticed');
      a.publish('t', 'second');
      expect(a.pendingCount()).toBe(1);
      failFirst(new Error('Connection is closed.'));
      await until(() => a.pendingCount() === 2, 5000, 'failed send kept');
      await redis.start();
      await batchDelivered(seen, ['first', 'second']);
      // What `a` put on the wire once Redis was back: the kept messages in publish order.
      expect(dataOf(publish.mock.calls.slice(1)).slice(0, 2)).toEqual(['first', 'second']);
    } finally {
      publish.mockRestore();
    }
  });

  it('the second sending repeats what was sent since the first, in order: an uncordon published after the outage stays last', async () => {
    // A second sending a second after the first, so the uncordon surely falls between the two.
    const a = bus('a', 1000);
    const b = bus('b');
    await Promise.all([a, b].map(subscribed));
    const publish = jest.spyOn(Redis.prototype, 'publish');
    try {
      await redis.stop();
      a.publish('cordon', 'w1');
      await until(() => a.pendingCount() === 1, 5000, 'cordon kept');
      await redis.start();
      await until(() => a.pendingCount() === 0, 10_000, 'kept cordon sent');
      a.publish('uncordon', 'w1');
      const replayed = () => sentBy(publish).lastIndexOf('cordon') > sentBy(publish).indexOf('uncordon');
      await until(replayed, 10_000, 'second sending');
      await new Promise((r) => setTimeout(r, 300));
      // Without the uncordon in the second sending, the others would end with the cordon again.
      expect(sentBy(publish).slice(-2)).toEqual(['cordon', 'uncordon']);
    } finally {
      publish.mockRestore();
    }
  });

  it('a message published while a send is under way waits behind it: a timed-out cordon that Redis still ran is not sent again after the uncordon', async () => {
    const { a, seen } = await sender();
    // The cordon reaches Redis (and b), but its answer is late: a's command timeout fails it.
    const original = Redis.prototype.publish;
    let timeOut!: () => void;
    const publish = jest.spyOn(Redis.prototype, 'publish').mockImplementationOnce(function (this: Redis, ...args: unknown[]) {
      void (original as (...a: unknown[]) => Promise<number>).apply(this, args);
      return new Promise<number>((_, reject) => (timeOut = () => reject(new Error('Command timed out')))) as never;
    });
    try {
      a.publish('t', 'cordon');
      a.publish('t', 'uncordon'); // the cordon's answer is not in yet
      await until(() => seen.includes('cordon'), 5000, 'cordon delivered');
      timeOut();
      await until(() => a.pendingCount() === 0 && seen.includes('uncordon'), 5000, 'kept messages sent');
      await new Promise((r) => setTimeout(r, 300)); // past a retry (the reconnect bound is 100 ms here)
      expect(seen.at(-1)).toBe('uncordon');
    } finally {
      publish.mockRestore();
    }
  });

  it('a send that times out on a connection that stays up is sent again, and what follows it too', async () => {
    const { a, seen } = await sender();
    // Redis busy for 600 ms (a script that loops): a's publish times out after 200 ms, the connection stays up.
    const busy = new Redis(redis.url);
    try {
      const stalled = busy.eval(
        "local s = redis.call('TIME') while true do local n = redis.call('TIME') if (n[1] - s[1]) * 1000000 + (n[2] - s[2]) > 600000 then break end end return 1",
        0,
      );
      await new Promise((r) => setTimeout(r, 50));
      a.publish('t', 'one');
      await until(() => a.pendingCount() === 1, 5000, 'timed-out send kept');
      expect(pubOf(a).status).toBe('ready');
      a.publish('t', 'two');
      await stalled;
    } finally {
      busy.disconnect();
    }
    await until(() => a.pendingCount() === 0, 5000, 'kept messages sent again');
    await until(() => seen.includes('two'), 5000, 'delivered');
    // 'one' may arrive twice (Redis ran the timed-out publish once it was free), never after 'two'.
    expect(seen.lastIndexOf('one')).toBeLessThan(seen.indexOf('two'));
  });
});
