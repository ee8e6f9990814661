import { Clock, TimerHandle } from '../common/clock';
import type { AuditEntry } from './audit-log';

const MINUTE_MS = 60_000;
/** Open buckets at most (addresses × operations in one minute); beyond, the oldest is written early. */
export const MAX_OPEN_BUCKETS = 10_000;

interface Bucket {
  entry: AuditEntry;
  address: string;
  count: number;
}

/**
 * Refusals at the admin token check, aggregated: one audit row per client address, operation,
 * refusal code and minute, saying how many requests it stands for — anyone can send such requests,
 * and one row per request would let them fill the audit table. A bucket is written when its minute
 * is over, when the trail is read (so a listing shows every refusal so far) and at shutdown.
 */
export class UnauthenticatedRefusals {
  private readonly open = new Map<string, Bucket>();
  private timer: TimerHandle | undefined;

  constructor(
    private readonly clock: Clock,
    private readonly write: (entry: AuditEntry) => void,
  ) {}

  add(entry: AuditEntry, address: string): void {
    const minute = Math.floor(entry.at / MINUTE_MS);
    const key = `${address}\n${entry.operation}\n${entry.errorCode}\n${minute}`;
    const bucket = this.open.get(key);
    if (bucket) {
      bucket.count++;
      return;
    }
    if (this.open.size >= MAX_OPEN_BUCKETS) this.close(this.open.keys().next().value as string);
    this.open.set(key, { entry, address, count: 1 });
    this.timer ??= this.clock.setTimeout(() => this.closeEnded(), (minute + 1) * MINUTE_MS - this.clock.now() + 50);
  }

  /** Writes every open bucket (a listing or shutdown wants them all). */
  flush(): void {
    for (const key of [...this.open.keys()]) this.close(key);
    this.stop();
  }

  stop(): void {
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  private closeEnded(): void {
    this.timer = undefined;
    const current = Math.floor(this.clock.now() / MINUTE_MS);
    for (const [key, b] of [...this.open]) if (Math.floor(b.entry.at / MINUTE_MS) < current) this.close(key);
    if (this.open.size > 0) this.timer = this.clock.setTimeout(() => this.closeEnded(), (current + 1) * MINUTE_MS - this.clock.now() + 50);
  }

  private close(key: string): void {
    const b = this.open.get(key);
    if (!b) return;
    this.open.delete(key);
    const start = new Date(Math.floor(b.entry.at / MINUTE_MS) * MINUTE_MS).toISOString();
    const times = b.count === 1 ? '1 request' : `${b.count} requests`;
    this.write({ ...b.entry, error: `${b.entry.error ?? 'Refused'} (${times} from ${b.address.slice(0, 64)} in the minute from ${start})` });
  }
}
