import { Clock, TimerHandle, daemonClock } from '../../clock';

/** One `loading` report: a fraction 0–1 and, when known, the seconds left. */
export interface ProgressReport {
  progress: number;
  etaSecs?: number;
}

/**
 * Turns an adapter's stream of progress values into `loading` reports the gateway can live with:
 * never backwards (a pull that discovers another layer does not undo what it reported), only on
 * change, and at most one per interval. A value held back by the interval goes out when the
 * interval ends, unless a newer one replaced it or the operation ended first (`close`).
 */
export class ProgressThrottle {
  private last?: ProgressReport;
  private lastAt = -Infinity;
  private pending?: ProgressReport;
  private timer?: TimerHandle;
  private closed = false;

  constructor(
    private readonly emit: (report: ProgressReport) => void,
    private readonly intervalMs: number,
    private readonly clock: Pick<Clock, 'now' | 'setTimeout' | 'clearTimeout'> = daemonClock,
  ) {}

  report(fraction: number, etaSecs?: number): void {
    if (this.closed || !Number.isFinite(fraction)) return;
    const floor = this.pending?.progress ?? this.last?.progress ?? 0;
    const progress = Math.max(floor, Math.round(Math.min(1, Math.max(0, fraction)) * 1000) / 1000);
    const eta = etaSecs !== undefined && Number.isFinite(etaSecs) && etaSecs >= 0 ? Math.round(etaSecs) : undefined;
    const next: ProgressReport = eta === undefined ? { progress } : { progress, etaSecs: eta };
    if (same(next, this.pending ?? this.last)) return;
    const wait = this.lastAt + this.intervalMs - this.clock.now();
    if (wait <= 0) {
      this.send(next);
      return;
    }
    this.pending = next;
    this.timer ??= this.clock.setTimeout(() => {
      this.timer = undefined;
      const held = this.pending;
      this.pending = undefined;
      if (held && !this.closed && !same(held, this.last)) this.send(held);
    }, wait);
  }

  /** The operation is over: nothing more is reported, a held-back value included. */
  close(): void {
    this.closed = true;
    this.pending = undefined;
    if (this.timer) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  private send(report: ProgressReport): void {
    this.pending = undefined;
    this.last = report;
    this.lastAt = this.clock.now();
    this.emit(report);
  }
}

function same(a: ProgressReport, b: ProgressReport | undefined): boolean {
  return b !== undefined && a.progress === b.progress && a.etaSecs === b.etaSecs;
}

/** Seconds left if the work goes on at the pace it has had since `startedAt`; undefined while too early to say. */
export function estimateEta(startedAt: number, now: number, fraction: number): number | undefined {
  const elapsedMs = now - startedAt;
  if (fraction <= 0.01 || fraction >= 1 || elapsedMs < 1000) return undefined;
  return Math.round((elapsedMs * (1 - fraction)) / fraction / 1000);
}
