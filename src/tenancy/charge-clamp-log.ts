/** Who reported the tokens of a request (a worker), for the clamp warning. */
export interface TokenReporter {
  id: string;
  name?: string;
  provider?: string;
}

/** One warning per worker per this period at most; the rest are counted into the next line. */
export const CLAMP_LOG_INTERVAL_MS = 60_000;
/** Workers remembered at most (a worker that reconnects gets a new id). */
const MAX_REMEMBERED = 1000;

/**
 * Rate-limits the warning that a worker's token report was cut down (gcra.ts: one charge moves a
 * bucket at most one window over its limit). A lying worker sends such reports with every answer:
 * one line per worker a minute says who and how often, without a line per request.
 */
export class ChargeClampLog {
  private readonly last = new Map<string, { at: number; suppressed: number }>();

  constructor(private readonly warn: (line: string) => void) {}

  clamped(now: number, worker: TokenReporter | undefined, tenant: string, bucketKey: string, reported: number, charged: number): void {
    const id = worker?.id ?? '(unknown worker)';
    const entry = this.last.get(id);
    if (entry && now - entry.at < CLAMP_LOG_INTERVAL_MS) {
      entry.suppressed++;
      return;
    }
    const more = entry?.suppressed ? ` (and ${entry.suppressed} more such report(s) from it since the last warning)` : '';
    const about = [worker?.name, worker?.provider && `provider "${worker.provider}"`].filter(Boolean).join(', ');
    const who = worker ? `worker ${worker.id}${about ? ` (${about})` : ''}` : 'an unknown worker';
    this.warn(
      `${who} reported ${reported} tokens for a request of tenant ${tenant}: charged ${charged} to ${bucketKey}, ` + `one window over its limit at most${more}`,
    );
    if (!entry && this.last.size >= MAX_REMEMBERED) this.forgetOld(now);
    this.last.set(id, { at: now, suppressed: 0 });
  }

  private forgetOld(now: number): void {
    for (const [id, e] of this.last) if (now - e.at >= CLAMP_LOG_INTERVAL_MS) this.last.delete(id);
    // All recent: forget the oldest (insertion order), the cap must hold.
    if (this.last.size >= MAX_REMEMBERED) this.last.delete(this.last.keys().next().value as string);
  }
}
