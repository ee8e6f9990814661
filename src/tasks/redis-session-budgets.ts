import type Redis from 'ioredis';
import type { Clock, TimerHandle } from '../common/clock';
import { SessionBudgetStore, SessionUsage } from './session-budgets';
import { TASK_KEY_PREFIX } from './task-cluster-redis';

/**
 * KEYS[1] the session's hash. ARGV: [1] this process's field, [2] batch sequence, [3] tokens,
 * [4] ms, [5] TTL ms. A batch is applied once: a retried one (its reply lost to a timeout) finds
 * its sequence already recorded and changes nothing. Returns {tokens, ms, last applied sequence}.
 */
const FLUSH_LUA = `
local last = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
local seq = tonumber(ARGV[2])
if seq > last then
  if tonumber(ARGV[3]) ~= 0 and redis.call('HINCRBY', KEYS[1], 'tokens', ARGV[3]) < 0 then redis.call('HSET', KEYS[1], 'tokens', 0) end
  if tonumber(ARGV[4]) ~= 0 then redis.call('HINCRBY', KEYS[1], 'ms', ARGV[4]) end
  redis.call('HSET', KEYS[1], ARGV[1], seq)
  last = seq
end
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return {tonumber(redis.call('HGET', KEYS[1], 'tokens') or '0'), tonumber(redis.call('HGET', KEYS[1], 'ms') or '0'), last}
`;

type FlushClient = Redis & {
  switchboardSessionFlush(key: string, field: string, seq: number, tokens: number, ms: number, ttl: number): Promise<[number, number, number]>;
};

interface Delta {
  tokens: number;
  timeMs: number;
}

interface Session {
  /** The session's totals as Redis last answered them (every replica's spending). */
  shared: SessionUsage;
  /** Spent here and not yet sent. */
  pending: Delta;
  /** Sent, not yet acknowledged; retried with the same sequence until it is. */
  inflight?: Delta & { seq: number };
  usedAt: number;
}

export interface RedisSessionBudgetsOptions {
  client: Redis;
  clock: Clock;
  ttlMs: number;
  /** This process among all that ever wrote (a restarted replica is a new one). */
  instance: string;
  /** Spending is sent at most this often per session (default 50 ms). */
  flushMs?: number;
  /** After a failed send, the next try waits this long (default 1 s). */
  retryMs?: number;
  prefix?: string;
}

/**
 * Session budgets shared by the replicas. Reads stay synchronous and local (a token of a stream
 * is checked without a round trip): a session's usage is its totals as Redis last reported them
 * plus what this replica spent since. Spending is sent in batches (one script call per session
 * every `flushMs` while it spends), each answered with the new totals; admission refreshes the
 * totals first (`refresh`, bounded by the command timeout).
 *
 * Redis unreachable: spending accumulates here and counts locally (the fallback); once Redis
 * answers again it is sent, exactly once (each batch carries a sequence the script records), so
 * nothing is counted twice after recovery.
 */
export class RedisSessionBudgets extends SessionBudgetStore {
  private readonly client: FlushClient;
  private readonly sessions = new Map<string, Session>();
  private readonly dirty = new Set<string>();
  private readonly flushMs: number;
  private readonly retryMs: number;
  private readonly prefix: string;
  private timer: TimerHandle | undefined;
  private seq = 0;
  private closed = false;

  constructor(private readonly options: RedisSessionBudgetsOptions) {
    super();
    this.client = options.client as FlushClient;
    if (typeof this.client.switchboardSessionFlush !== 'function') options.client.defineCommand('switchboardSessionFlush', { numberOfKeys: 1, lua: FLUSH_LUA });
    this.flushMs = options.flushMs ?? 50;
    this.retryMs = options.retryMs ?? 1000;
    this.prefix = options.prefix ?? TASK_KEY_PREFIX;
  }

  usage(key: string): SessionUsage {
    const s = this.sessions.get(key);
    if (!s) return { tokens: 0, timeMs: 0 };
    const tokens = s.shared.tokens + s.pending.tokens + (s.inflight?.tokens ?? 0);
    return { tokens: Math.max(0, tokens), timeMs: s.shared.timeMs + s.pending.timeMs + (s.inflight?.timeMs ?? 0) };
  }

  addTokens(key: string, tokens: number, now: number): void {
    this.touch(key, now).pending.tokens += tokens;
    this.markDirty(key);
  }

  addTime(key: string, ms: number, now: number): void {
    this.touch(key, now).pending.timeMs += Math.max(0, ms);
    this.markDirty(key);
  }

  prune(now: number): void {
    for (const [key, s] of this.sessions) {
      if (now - s.usedAt >= this.options.ttlMs && !this.dirty.has(key) && !s.inflight) this.sessions.delete(key);
    }
  }

  /** Sends what this replica spent and takes the totals back; on failure the local view stands. */
  override async refresh(key: string, now: number): Promise<void> {
    this.touch(key, now);
    await this.send(key).catch(() => undefined);
  }

  /** Sends what is left (best effort, bounded by the command timeout) and stops. */
  async close(): Promise<void> {
    if (this.closed) return;
    if (this.timer) this.options.clock.clearTimeout(this.timer);
    this.timer = undefined;
    await this.flush().catch(() => undefined);
    this.closed = true;
  }

  /** Every session with unsent spending, in one pipeline of script calls. */
  async flush(): Promise<void> {
    this.timer = undefined;
    const keys = [...this.dirty];
    const results = await Promise.allSettled(keys.map((k) => this.send(k)));
    if (this.dirty.size > 0 && !this.closed) this.schedule(results.some((r) => r.status === 'rejected') ? this.retryMs : this.flushMs);
  }

  private async send(key: string): Promise<void> {
    const s = this.sessions.get(key);
    if (!s) return;
    // One batch in flight per session: a failed one is retried as it was before anything newer.
    if (!s.inflight && (s.pending.tokens !== 0 || s.pending.timeMs !== 0)) {
      s.inflight = { ...s.pending, seq: ++this.seq };
      s.pending = { tokens: 0, timeMs: 0 };
    }
    const batch = s.inflight;
    this.dirty.delete(key);
    let reply: [number, number, number];
    try {
      reply = await this.client.switchboardSessionFlush(
        this.prefix + 'session:' + key,
        this.options.instance,
        batch?.seq ?? 0,
        batch?.tokens ?? 0,
        Math.round(batch?.timeMs ?? 0),
        this.options.ttlMs,
      );
    } catch (e) {
      if (s.inflight || s.pending.tokens !== 0 || s.pending.timeMs !== 0) {
        this.dirty.add(key);
        if (!this.closed) this.schedule(this.retryMs);
      }
      throw e;
    }
    const [tokens, ms, applied] = reply.map(Number);
    s.shared = { tokens, timeMs: ms };
    // The totals include every batch up to `applied`, the one in flight too when it was (a retry).
    if (s.inflight && s.inflight.seq <= applied) s.inflight = undefined;
    if (s.inflight || s.pending.tokens !== 0 || s.pending.timeMs !== 0) this.markDirty(key);
  }

  private touch(key: string, now: number): Session {
    let s = this.sessions.get(key);
    if (!s) this.sessions.set(key, (s = { shared: { tokens: 0, timeMs: 0 }, pending: { tokens: 0, timeMs: 0 }, usedAt: now }));
    s.usedAt = now;
    return s;
  }

  private markDirty(key: string): void {
    this.dirty.add(key);
    if (!this.timer && !this.closed) this.schedule(this.flushMs);
  }

  private schedule(ms: number): void {
    if (this.timer) return;
    this.timer = this.options.clock.setTimeout(() => void this.flush().catch(() => undefined), ms);
  }
}
