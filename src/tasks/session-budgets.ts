import type { TenantSettings } from '../config/sections/tenancy';

/** What a session has spent so far. */
export interface SessionUsage {
  tokens: number;
  /** Running time of its finished tasks (running ones are added by the caller). */
  timeMs: number;
}

/**
 * Budget state of task sessions, by session key. Synchronous, in memory here; replicas share it
 * through Redis (RedisSessionBudgets: the same reads and writes over a local view that Redis keeps
 * up to date).
 */
export abstract class SessionBudgetStore {
  abstract usage(key: string): SessionUsage;
  /** Adds (or, to correct an estimate, takes back) tokens. */
  abstract addTokens(key: string, tokens: number, now: number): void;
  abstract addTime(key: string, ms: number, now: number): void;
  /** Forgets sessions idle for longer than their time to live. */
  abstract prune(now: number): void;
  /** Brings `usage(key)` up to date with what other replicas spent (nothing to do in one process). */
  refresh(_key: string, _now: number): Promise<void> | void {
    return undefined;
  }
}

const NOTHING: SessionUsage = Object.freeze({ tokens: 0, timeMs: 0 });

type Entry = SessionUsage & { usedAt: number; movedAt: number };

export class InMemorySessionBudgets extends SessionBudgetStore {
  /**
   * Insertion order is last-use order to within `moveStepMs` (an entry is moved to the end when
   * used, at most once per step: moving re-inserts into the Map, far too dear for every token of
   * a stream). Pruning stops at the first live entry, so a session outlives its TTL by at most a step.
   */
  private readonly sessions = new Map<string, Entry>();
  private readonly moveStepMs: number;

  constructor(private readonly ttlMs: number) {
    super();
    this.moveStepMs = ttlMs / 16;
  }

  usage(key: string): SessionUsage {
    return this.sessions.get(key) ?? NOTHING;
  }

  addTokens(key: string, tokens: number, now: number): void {
    const s = this.touch(key, now);
    s.tokens = Math.max(0, s.tokens + tokens);
  }

  addTime(key: string, ms: number, now: number): void {
    this.touch(key, now).timeMs += Math.max(0, ms);
  }

  prune(now: number): void {
    for (const [key, s] of this.sessions) {
      if (now - s.usedAt < this.ttlMs) return;
      this.sessions.delete(key);
    }
  }

  private touch(key: string, now: number): Entry {
    let s = this.sessions.get(key);
    if (!s) this.sessions.set(key, (s = { tokens: 0, timeMs: 0, usedAt: now, movedAt: now }));
    else if (now - s.movedAt >= this.moveStepMs) {
      this.sessions.delete(key);
      this.sessions.set(key, s);
      s.movedAt = now;
    }
    s.usedAt = now;
    return s;
  }
}

/** A task's limits: what its request asked for, never above its tenant's maximum. */
export interface BudgetLimits {
  tokens?: number;
  timeMs?: number;
}

export function budgetLimits(requested: { tokens?: number; timeSecs?: number } | undefined, tenant: TenantSettings): BudgetLimits {
  const limits: BudgetLimits = {};
  const tokens = lowest(requested?.tokens, tenant.sessionTokens);
  const secs = lowest(requested?.timeSecs, tenant.sessionTimeSecs);
  if (tokens !== undefined) limits.tokens = tokens;
  if (secs !== undefined) limits.timeMs = Math.round(secs * 1000);
  return limits;
}

/** A tenant maximum of 0 means "no maximum", as for every other tenant limit. */
function lowest(requested: number | undefined, max: number | undefined): number | undefined {
  const cap = max !== undefined && max > 0 ? max : undefined;
  if (requested === undefined) return cap;
  return cap === undefined ? requested : Math.min(requested, cap);
}

/**
 * Where a task's budget is kept: its session's (tenant and `session_id`), or, for a task without
 * a session, its own.
 */
export function sessionKey(tenant: string, sessionId: string | undefined, taskId: string): string {
  return sessionId !== undefined ? `${tenant}\u0000s\u0000${sessionId}` : `${tenant}\u0000t\u0000${taskId}`;
}
