import type { ReplicaRecord } from './membership.port';

/** What a replica writes about itself at each heartbeat; the store stamps `last_seen`. */
export type ReplicaAnnouncement = Omit<ReplicaRecord, 'last_seen'>;

/**
 * Shared storage of the member list (Redis in production, an in-memory fake in unit tests). Every
 * call is bounded by the store's own timeout and rejects on any trouble; the caller degrades.
 */
export interface MembershipStore {
  /** Writes the announcement, drops replicas not seen for `timeoutMs`, and returns the live ones. */
  beat(self: ReplicaAnnouncement, timeoutMs: number): Promise<ReplicaRecord[]>;
  /** The live replicas (dropping those not seen for `timeoutMs`), without announcing. */
  list(timeoutMs: number): Promise<ReplicaRecord[]>;
  /** Removes the replica at once. */
  leave(id: string): Promise<void>;
  /** True while the connection is up (a call may still fail). */
  connected(): boolean;
  /** `up` after each (re)connection, `down` with a reason when the connection is lost. */
  onStatus(listener: (status: 'up' | 'down', reason?: string) => void): void;
  close(): Promise<void>;
}

/** Parses one stored record; anything malformed is skipped rather than trusted. */
export function parseRecord(id: string, lastSeen: number, json: string): ReplicaRecord | undefined {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return undefined;
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const v = value as Record<string, unknown>;
  if (v.id !== id || typeof v.advertise_url !== 'string' || typeof v.version !== 'string') return undefined;
  if (typeof v.started_at !== 'number' || !Number.isFinite(v.started_at) || !Number.isFinite(lastSeen)) return undefined;
  return { id, advertise_url: v.advertise_url, started_at: v.started_at, last_seen: lastSeen, version: v.version };
}
