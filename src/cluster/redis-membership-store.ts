import Redis, { RedisOptions } from 'ioredis';
import { clusterRedisOptions } from './redis-options';
import { MembershipStore, parseRecord, ReplicaAnnouncement } from './membership-store';
import type { ReplicaRecord } from './membership.port';

export const CLUSTER_KEY_PREFIX = 'switchboard:cluster:';

/**
 * KEYS[1] sorted set id → last heartbeat (Redis TIME, ms); KEYS[2] hash id → record JSON.
 * ARGV[1] timeout ms; ARGV[2] id and ARGV[3] record JSON to announce ('' = read only).
 * Drops ids older than the timeout, then returns {id, last_seen, json, …}. Both keys expire after
 * ten timeouts without a heartbeat, so a cluster that is gone leaves nothing behind.
 */
const MEMBERSHIP_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local timeout = tonumber(ARGV[1])
if ARGV[2] ~= '' then
  redis.call('ZADD', KEYS[1], now, ARGV[2])
  redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
  redis.call('PEXPIRE', KEYS[1], timeout * 10)
  redis.call('PEXPIRE', KEYS[2], timeout * 10)
end
local dead = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. (now - timeout))
for _, id in ipairs(dead) do
  redis.call('ZREM', KEYS[1], id)
  redis.call('HDEL', KEYS[2], id)
end
local live = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
local out = {}
for i = 1, #live, 2 do
  out[#out + 1] = live[i]
  out[#out + 1] = live[i + 1]
  out[#out + 1] = redis.call('HGET', KEYS[2], live[i]) or ''
end
return out
`;

export interface RedisMembershipStoreOptions {
  url: string;
  /** Every command fails after this (CLUSTER_REDIS_TIMEOUT_MS). */
  commandTimeoutMs: number;
  /** Reconnect delays double from 50 ms up to this; retrying never stops. */
  maxReconnectDelayMs?: number;
  keyPrefix?: string;
  /** Extra ioredis options (tests); the fail-fast ones win. */
  redisOptions?: RedisOptions;
}

type MembershipClient = Redis & { switchboardMembership(zset: string, hash: string, timeout: number, id: string, json: string): Promise<unknown> };

/** The member list in Redis: one script call per heartbeat, atomic, timed by Redis itself. */
export class RedisMembershipStore implements MembershipStore {
  private readonly client: MembershipClient;
  private readonly zset: string;
  private readonly hash: string;
  private lastError: string | undefined;
  private closed = false;

  constructor(options: RedisMembershipStoreOptions) {
    const prefix = options.keyPrefix ?? CLUSTER_KEY_PREFIX;
    this.zset = `${prefix}members`;
    this.hash = `${prefix}records`;
    const maxDelay = options.maxReconnectDelayMs ?? 2000;
    this.client = new Redis(options.url, {
      ...options.redisOptions,
      ...clusterRedisOptions(options.commandTimeoutMs, 'switchboard-cluster', maxDelay),
    }) as MembershipClient;
    this.client.defineCommand('switchboardMembership', { numberOfKeys: 2, lua: MEMBERSHIP_LUA });
    // Every failed reconnect emits 'error': kept for the next 'down' report, never thrown.
    this.client.on('error', (err: Error) => (this.lastError = err.message));
    this.client.connect().catch(() => undefined);
  }

  async beat(self: ReplicaAnnouncement, timeoutMs: number): Promise<ReplicaRecord[]> {
    return this.run(timeoutMs, self.id, JSON.stringify(self));
  }

  async list(timeoutMs: number): Promise<ReplicaRecord[]> {
    return this.run(timeoutMs, '', '');
  }

  async leave(id: string): Promise<void> {
    if (this.client.status !== 'ready') return;
    await this.client.multi().zrem(this.zset, id).hdel(this.hash, id).exec();
  }

  connected(): boolean {
    return this.client.status === 'ready';
  }

  onStatus(listener: (status: 'up' | 'down', reason?: string) => void): void {
    this.client.on('ready', () => listener('up'));
    this.client.on('close', () => {
      if (!this.closed) listener('down', this.lastError ?? 'connection closed');
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.client.status === 'ready') await this.client.quit().catch(() => this.client.disconnect());
    else this.client.disconnect();
  }

  private async run(timeoutMs: number, id: string, json: string): Promise<ReplicaRecord[]> {
    const reply = await this.client.switchboardMembership(this.zset, this.hash, timeoutMs, id, json);
    if (!Array.isArray(reply)) throw new Error('unexpected reply to the membership script');
    const out: ReplicaRecord[] = [];
    for (let i = 0; i + 2 < reply.length; i += 3) {
      const record = parseRecord(String(reply[i]), Number(reply[i + 1]), String(reply[i + 2]));
      if (record) out.push(record);
    }
    return out;
  }
}
