import type Redis from 'ioredis';
import { TASK_KEY_PREFIX } from './task-cluster-redis';

/** The outcome of claiming a task id for this replica. */
export type Claim = 'claimed' | 'taken' | 'unavailable';

/**
 * Which replica holds a task (its events live in that replica's memory). A single process needs
 * no record: every task is here. In cluster mode each admitted task is recorded in Redis under its
 * tenant and id, so any replica can find the one to ask.
 */
export abstract class TaskLocator {
  abstract readonly enabled: boolean;
  /**
   * Records the id for this replica unless a task of the tenant holds it on a live replica
   * (`isLive`: the record of a replica that is gone is taken over: its task was lost with it).
   */
  abstract claim(tenant: string, id: string, ttlMs: number, isLive: (holder: string) => boolean): Promise<Claim>;
  /** The holder of the task (task-holder.ts); undefined when none does; 'unavailable' when Redis does not answer. */
  abstract owner(tenant: string, id: string): Promise<string | undefined | 'unavailable'>;
  /** The task ended: its record lasts as long as its retention. Never throws, never waits. */
  abstract ended(tenant: string, id: string, retentionMs: number): void;
  /** The task is forgotten (or was refused): its id is free again. Never throws. */
  abstract release(tenant: string, id: string): Promise<void>;
}

export class LocalTaskLocator extends TaskLocator {
  readonly enabled = false;
  claim(): Promise<Claim> {
    return Promise.resolve('claimed');
  }
  owner(): Promise<undefined> {
    return Promise.resolve(undefined);
  }
  ended(): void {}
  release(): Promise<void> {
    return Promise.resolve();
  }
}

/** Deletes the record only if this replica still holds it (the id may have been taken again since). */
const RELEASE_LUA = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;
/** Takes the record over from a replica that is gone, if it still names that one. */
const TAKEOVER_LUA = `if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) return 1 end return 0`;
const ENDED_LUA = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`;

/** One string key per task, `<prefix>owner:<tenant>:<id>` → its holder (`<replica id>@<started_at>`), expiring with the task. */
export class RedisTaskLocator extends TaskLocator {
  readonly enabled = true;

  constructor(
    private readonly client: Redis,
    /** This replica process as records name it. */
    private readonly self: () => string,
    private readonly prefix = TASK_KEY_PREFIX,
  ) {
    super();
  }

  async claim(tenant: string, id: string, ttlMs: number, isLive: (holder: string) => boolean): Promise<Claim> {
    const key = this.key(tenant, id);
    const ttl = Math.max(1, Math.round(ttlMs));
    try {
      const self = this.self();
      if ((await this.client.set(key, self, 'PX', ttl, 'NX')) === 'OK') return 'claimed';
      const holder = await this.client.get(key);
      if (holder === null || holder === self || isLive(holder)) return 'taken';
      return (await this.client.eval(TAKEOVER_LUA, 1, key, holder, self, ttl)) === 1 ? 'claimed' : 'taken';
    } catch {
      return 'unavailable';
    }
  }

  async owner(tenant: string, id: string): Promise<string | undefined | 'unavailable'> {
    try {
      return (await this.client.get(this.key(tenant, id))) ?? undefined;
    } catch {
      return 'unavailable';
    }
  }

  ended(tenant: string, id: string, retentionMs: number): void {
    this.client.eval(ENDED_LUA, 1, this.key(tenant, id), this.self(), Math.max(1, Math.round(retentionMs))).catch(() => undefined);
  }

  async release(tenant: string, id: string): Promise<void> {
    await this.client.eval(RELEASE_LUA, 1, this.key(tenant, id), this.self()).catch(() => undefined);
  }

  private key(tenant: string, id: string): string {
    // Tenant ids never hold ':' (A-Z a-z 0-9 . _ -), so the pair is unambiguous.
    return `${this.prefix}owner:${tenant}:${id}`;
  }
}
