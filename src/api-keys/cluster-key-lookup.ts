import type { IncomingHttpHeaders } from 'node:http';
import { hasOnlyKeyCharacters, hashKey, looksLikeGatewayKey } from './api-key-material';
import type { ApiKeyRecord } from './api-key-store';
import { presentedCredentials } from './presented-credentials';

/** The longest a request waits on the database for a key it presented that this replica does not hold. */
export const KEY_LOOKUP_TIMEOUT_MS = 500;
/** How long "no such key" is remembered for a hash, so a client repeating a wrong key costs one lookup. */
export const KEY_LOOKUP_NEGATIVE_TTL_MS = 5_000;
/** Hashes remembered as unknown at most (oldest forgotten first). */
const NEGATIVE_MAX = 10_000;
/** Lookups running at once at most; beyond it a request is judged on what memory holds. */
const MAX_IN_FLIGHT = 32;

export interface ClusterKeyLookupOptions {
  /** Whether this replica holds a key with this SHA-256 (a Map lookup). */
  knows(hash: string): boolean;
  /** The key with this SHA-256 as stored now. */
  find(hash: string): Promise<ApiKeyRecord | undefined>;
  /** Holds a key found in the store (as a change from another replica applies). */
  adopt(record: ApiKeyRecord): void;
  /** Whether the failed-auth limiter blocks this request's client already (then nothing is looked up). */
  blocked(headers: IncomingHttpHeaders, peer: string | undefined): boolean;
  now(): number;
  timeoutMs?: number;
  negativeTtlMs?: number;
}

/**
 * Cluster mode only: a key created on another replica a moment ago may not have reached this one
 * yet. Before a request is authenticated (synchronously, from memory), a presented key in the
 * gateway's format whose hash this replica does not hold is looked up once in the database (by its
 * SHA-256, bounded by KEY_LOOKUP_TIMEOUT_MS, one lookup per hash at a time); a key found is held from
 * then on, so the request is accepted and never counted by the failed-auth limiter. "Not found" is
 * remembered for KEY_LOOKUP_NEGATIVE_TTL_MS. Keys held in memory never cost a lookup.
 */
export class ClusterKeyLookup {
  private readonly negative = new Map<string, number>();
  private readonly inFlight = new Map<string, Promise<void>>();

  constructor(private readonly options: ClusterKeyLookupOptions) {}

  /**
   * Undefined when there is nothing to look up (the usual case: no key, or a key held in memory;
   * no promise is made), else a promise that resolves once every unknown key the headers present
   * was looked up or the bound passed; it never rejects.
   */
  prepare(headers: IncomingHttpHeaders, peer: string | undefined): Promise<void> | undefined {
    if (headers.authorization === undefined && headers['x-api-key'] === undefined) return undefined;
    let unknown: string[] | undefined;
    for (const p of presentedCredentials(headers)) {
      if (!looksLikeGatewayKey(p.value) || !hasOnlyKeyCharacters(p.value)) continue;
      const hash = hashKey(p.value);
      if (!this.options.knows(hash) && !this.recentlyMissing(hash)) (unknown ??= []).push(hash);
    }
    if (!unknown || this.options.blocked(headers, peer)) return undefined;
    return Promise.all(unknown.map((hash) => this.lookUp(hash))).then(() => undefined);
  }

  private recentlyMissing(hash: string): boolean {
    const until = this.negative.get(hash);
    if (until === undefined) return false;
    if (until > this.options.now()) return true;
    this.negative.delete(hash);
    return false;
  }

  private lookUp(hash: string): Promise<void> {
    const running = this.inFlight.get(hash);
    if (running) return running;
    if (this.inFlight.size >= MAX_IN_FLIGHT) return Promise.resolve();
    const work = this.bounded(this.options.find(hash))
      .then((record) => {
        if (record === 'timeout') return;
        if (record && record.keyHash === hash) this.options.adopt(record);
        else this.remember(hash);
      })
      .catch(() => undefined) // the database failed: judged on what memory holds
      .finally(() => this.inFlight.delete(hash));
    this.inFlight.set(hash, work);
    return work;
  }

  private remember(hash: string): void {
    if (this.negative.size >= NEGATIVE_MAX) {
      const oldest = this.negative.keys().next().value;
      if (oldest !== undefined) this.negative.delete(oldest);
    }
    this.negative.set(hash, this.options.now() + (this.options.negativeTtlMs ?? KEY_LOOKUP_NEGATIVE_TTL_MS));
  }

  private bounded<T>(work: Promise<T>): Promise<T | 'timeout'> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), this.options.timeoutMs ?? KEY_LOOKUP_TIMEOUT_MS);
    });
    return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
  }
}
