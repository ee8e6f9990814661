import { Inject, Injectable } from '@nestjs/common';
import { CLOCK, Clock } from '../common/clock';

/** The rate window of pool health: one-second buckets over the last minute. */
const WINDOW_SECS = 60;

/** Requests and server-side errors per second over the last minute, in a fixed ring (no allocation). */
class MinuteRing {
  private readonly second = new Float64Array(WINDOW_SECS).fill(-Infinity);
  private readonly requests = new Uint32Array(WINDOW_SECS);
  private readonly errors = new Uint32Array(WINDOW_SECS);

  add(now: number, error: boolean): void {
    const sec = Math.floor(now / 1000);
    const i = ((sec % WINDOW_SECS) + WINDOW_SECS) % WINDOW_SECS;
    if (this.second[i] !== sec) {
      this.second[i] = sec;
      this.requests[i] = 0;
      this.errors[i] = 0;
    }
    this.requests[i]++;
    if (error) this.errors[i]++;
  }

  /** Totals of the buckets within the last WINDOW_SECS seconds (the current one included). */
  totals(now: number): { requests: number; errors: number } {
    const sec = Math.floor(now / 1000);
    let requests = 0;
    let errors = 0;
    for (let i = 0; i < WINDOW_SECS; i++) {
      if (this.second[i] > sec - WINDOW_SECS && this.second[i] <= sec) {
        requests += this.requests[i];
        errors += this.errors[i];
      }
    }
    return { requests, errors };
  }
}

/** The recent history of a pool: ten-second buckets over the last five minutes. */
export const HISTORY_BUCKET_SECS = 10;
export const HISTORY_BUCKETS = 30;
/** The buckets that make "the last minute" of the latency percentiles (the current one included). */
const LATENCY_WINDOW_BUCKETS = 6;
/**
 * Latency histogram bins: bin i holds durations up to 2^(i/4) ms (each about 19 % wider than the
 * last), from 1 ms to about 14.7 minutes; longer durations go in the last bin.
 */
const LATENCY_BINS = 80;
const BIN_UPPER_MS = Array.from({ length: LATENCY_BINS }, (_, i) => 2 ** (i / 4));
/** Recent error answers kept for operators, newest first (all pools and unrouted requests together). */
export const RECENT_ERRORS = 50;
const MAX_FIELD_CHARS = 200;

function binOf(ms: number): number {
  if (!(ms > 1)) return 0;
  return Math.min(LATENCY_BINS - 1, Math.ceil(4 * Math.log2(ms)));
}

/**
 * The q-quantile of a latency histogram, interpolated linearly inside its bin (so within a bin's
 * width, about 19 %, of the exact value); null without samples.
 */
export function histogramQuantile(bins: ArrayLike<number>, q: number): number | null {
  let n = 0;
  for (let i = 0; i < bins.length; i++) n += bins[i];
  if (n === 0) return null;
  const rank = Math.max(1, Math.ceil(q * n));
  let seen = 0;
  for (let i = 0; i < bins.length; i++) {
    if (bins[i] === 0) continue;
    if (seen + bins[i] >= rank) {
      const lower = i === 0 ? 0 : BIN_UPPER_MS[i - 1];
      const upper = BIN_UPPER_MS[i];
      return Math.round(lower + ((upper - lower) * (rank - seen)) / bins[i]);
    }
    seen += bins[i];
  }
  return Math.round(BIN_UPPER_MS[bins.length - 1]);
}

/**
 * Requests, server-side errors and a latency histogram of served requests per ten seconds over the
 * last five minutes, in fixed typed arrays (no allocation after construction).
 */
class HistoryRing {
  private readonly start = new Float64Array(HISTORY_BUCKETS).fill(-Infinity);
  private readonly requests = new Uint32Array(HISTORY_BUCKETS);
  private readonly errors = new Uint32Array(HISTORY_BUCKETS);
  private readonly latency = new Uint32Array(HISTORY_BUCKETS * LATENCY_BINS);

  add(now: number, error: boolean, servedMs: number | undefined): void {
    const slot = Math.floor(now / 1000 / HISTORY_BUCKET_SECS);
    const i = ((slot % HISTORY_BUCKETS) + HISTORY_BUCKETS) % HISTORY_BUCKETS;
    if (this.start[i] !== slot) {
      this.start[i] = slot;
      this.requests[i] = 0;
      this.errors[i] = 0;
      this.latency.fill(0, i * LATENCY_BINS, (i + 1) * LATENCY_BINS);
    }
    this.requests[i]++;
    if (error) this.errors[i]++;
    if (servedMs !== undefined) this.latency[i * LATENCY_BINS + binOf(servedMs)]++;
  }

  /** The series, oldest bucket first; the last one is the current, still filling, bucket. */
  series(now: number): PoolHistory {
    const current = Math.floor(now / 1000 / HISTORY_BUCKET_SECS);
    const requests: number[] = [];
    const errors: number[] = [];
    const p50: Array<number | null> = [];
    const p95: Array<number | null> = [];
    for (let slot = current - HISTORY_BUCKETS + 1; slot <= current; slot++) {
      const i = ((slot % HISTORY_BUCKETS) + HISTORY_BUCKETS) % HISTORY_BUCKETS;
      if (this.start[i] !== slot) {
        requests.push(0);
        errors.push(0);
        p50.push(null);
        p95.push(null);
        continue;
      }
      const bins = this.latency.subarray(i * LATENCY_BINS, (i + 1) * LATENCY_BINS);
      requests.push(this.requests[i]);
      errors.push(this.errors[i]);
      p50.push(histogramQuantile(bins, 0.5));
      p95.push(histogramQuantile(bins, 0.95));
    }
    return {
      bucket_secs: HISTORY_BUCKET_SECS,
      start: new Date((current - HISTORY_BUCKETS + 1) * HISTORY_BUCKET_SECS * 1000).toISOString(),
      requests,
      errors,
      latency_p50_ms: p50,
      latency_p95_ms: p95,
    };
  }

  /** Latency percentiles of served requests over the last LATENCY_WINDOW_BUCKETS buckets. */
  latencyPercentiles(now: number): LatencyPercentiles {
    const current = Math.floor(now / 1000 / HISTORY_BUCKET_SECS);
    const merged = new Uint32Array(LATENCY_BINS);
    for (let slot = current - LATENCY_WINDOW_BUCKETS + 1; slot <= current; slot++) {
      const i = ((slot % HISTORY_BUCKETS) + HISTORY_BUCKETS) % HISTORY_BUCKETS;
      if (this.start[i] !== slot) continue;
      for (let b = 0; b < LATENCY_BINS; b++) merged[b] += this.latency[i * LATENCY_BINS + b];
    }
    let samples = 0;
    for (const c of merged) samples += c;
    return {
      p50: histogramQuantile(merged, 0.5),
      p90: histogramQuantile(merged, 0.9),
      p95: histogramQuantile(merged, 0.95),
      p99: histogramQuantile(merged, 0.99),
      samples,
    };
  }
}

/** `history` of a pool in `/admin/stats`. */
export interface PoolHistory {
  bucket_secs: number;
  /** Start of the oldest bucket. */
  start: string;
  /** Requests that finished in each bucket (as `requests_per_min` counts them). */
  requests: number[];
  /** Those of them that ended with a 5xx (as `error_rate` counts them). */
  errors: number[];
  /** Duration percentiles of the bucket's served requests; null when none. */
  latency_p50_ms: Array<number | null>;
  latency_p95_ms: Array<number | null>;
}

/** `latency_ms` of a pool in `/admin/stats`: served requests of the last minute. */
export interface LatencyPercentiles {
  p50: number | null;
  p90: number | null;
  p95: number | null;
  p99: number | null;
  samples: number;
}

/** What `finished` may be told about the request, for its duration and the recent-errors list (a RelayRequest is one). */
export interface FinishedRequest {
  readonly receivedAt: number;
  readonly correlationId: string;
  readonly model: string;
  readonly tenant: string;
  readonly worker?: { readonly id: string } | undefined;
}

/** One entry of `recent_errors` in `/admin/stats`. */
export interface RecentError {
  at: string;
  pool: string | null;
  status: number;
  /** The gateway's error code; null when the backend answered the 5xx. */
  code: string | null;
  message: string | null;
  correlation_id: string | null;
  model: string | null;
  tenant: string | null;
  worker_id: string | null;
}

/** Counters of one pool since the gateway started. */
export class PoolCounters {
  /** Requests a worker answered (any status the backend returned, streams included). */
  served = 0;
  /** Requests whose client went away before the answer (recorded as 499). */
  cancelled = 0;
  /** Gateway error answers by code, refusals before dispatch included. */
  readonly errorsByCode = new Map<string, number>();
  /** The subset of errorsByCode refused before dispatch (queue full, pool unavailable, …). */
  readonly rejectedByCode = new Map<string, number>();
  promptTokens = 0;
  completionTokens = 0;
  readonly lastMinute = new MinuteRing();
  readonly history = new HistoryRing();
}

export interface PoolRates {
  requests_per_min: number;
  /** Share of the last minute's finished requests that ended with a 5xx (gateway or backend); 0 without traffic. */
  error_rate: number;
}

/**
 * Per-pool request figures for `/v1/pools/:id/health` and `/admin/stats`, fed by the dispatcher
 * when a request finishes. Everything is in memory and restarts at zero with the process; the
 * Prometheus metrics remain the durable, aggregatable source.
 */
@Injectable()
export class PoolStats {
  private readonly pools = new Map<string, PoolCounters>();
  /** Requests no pool took (unknown model, bad pin, …). */
  readonly unrouted = new PoolCounters();
  /** Requests a watchdog caught, by kind (`/admin/stats`; docs/routing.md#watchdogs). */
  readonly watchdogs: Record<string, number> = { first_byte: 0, stream_idle: 0 };
  /** Every finished request, whatever pool (or none) it counted for: the gateway's own rates, history and latency. */
  private readonly overallMinute = new MinuteRing();
  private readonly overallHistory = new HistoryRing();

  constructor(@Inject(CLOCK) private readonly clock: Clock) {}

  /**
   * A request finished with `status`; `code` when the gateway answered with an error. With `req`,
   * a served request's duration feeds the latency percentiles, and an error answer (a gateway
   * error, or a backend 5xx) is remembered with its correlation id in `recentErrors`.
   */
  finished(pool: string | undefined, status: number, code?: string, req?: FinishedRequest, message?: string): void {
    const c = this.countersOf(pool);
    const now = this.clock.now();
    const served = !code && status !== 499;
    c.lastMinute.add(now, status >= 500);
    const servedMs = served && req ? Math.max(0, now - req.receivedAt) : undefined;
    c.history.add(now, status >= 500, servedMs);
    this.overallMinute.add(now, status >= 500);
    this.overallHistory.add(now, status >= 500, servedMs);
    if (code) bump(c.errorsByCode, code);
    else if (status === 499) c.cancelled++;
    else c.served++;
    if (code || status >= 500) this.rememberError(now, pool, status, code, req, message);
  }

  /** Error answers, newest first (at most RECENT_ERRORS, every pool and unrouted requests together). */
  recentErrors(): RecentError[] {
    const out: RecentError[] = [];
    for (let k = 1; k <= this.errorCount; k++) out.push(this.errors[(this.errorNext - k + RECENT_ERRORS) % RECENT_ERRORS]);
    return out;
  }

  /** Requests, errors and latency of the pool per ten seconds over the last five minutes. */
  history(pool: string): PoolHistory {
    return this.of(pool).history.series(this.clock.now());
  }

  /** Duration percentiles of the pool's served requests over the last minute. */
  latency(pool: string): LatencyPercentiles {
    return this.of(pool).history.latencyPercentiles(this.clock.now());
  }

  /** A request was refused before dispatch (also counted by `finished`). */
  rejected(pool: string | undefined, code: string): void {
    bump(this.countersOf(pool).rejectedByCode, code);
  }

  tokens(pool: string, prompt: number, completion: number): void {
    const c = this.countersOf(pool);
    c.promptTokens += prompt;
    c.completionTokens += completion;
  }

  /** The pool's counters (zeros for a pool that has seen nothing yet). */
  of(pool: string): PoolCounters {
    return this.pools.get(pool) ?? EMPTY;
  }

  rates(pool: string): PoolRates {
    return ratesOf(this.of(pool).lastMinute, this.clock.now());
  }

  /** Every request the gateway finished (all pools and unrouted ones): last-minute rates, latency, history. */
  overall(): PoolRates & { latency_ms: LatencyPercentiles; history: PoolHistory } {
    const now = this.clock.now();
    return { ...ratesOf(this.overallMinute, now), latency_ms: this.overallHistory.latencyPercentiles(now), history: this.overallHistory.series(now) };
  }

  /** A deleted provider's figures go with it. */
  forget(pool: string): void {
    this.pools.delete(pool);
  }

  private readonly errors: RecentError[] = new Array(RECENT_ERRORS);
  private errorNext = 0;
  private errorCount = 0;

  private rememberError(
    now: number,
    pool: string | undefined,
    status: number,
    code: string | undefined,
    req: FinishedRequest | undefined,
    message: string | undefined,
  ): void {
    this.errors[this.errorNext] = {
      at: new Date(now).toISOString(),
      pool: pool ?? null,
      status,
      code: code ?? null,
      message: clip(message),
      correlation_id: clip(req?.correlationId),
      model: clip(req?.model),
      tenant: clip(req?.tenant),
      worker_id: req?.worker?.id ?? null,
    };
    this.errorNext = (this.errorNext + 1) % RECENT_ERRORS;
    if (this.errorCount < RECENT_ERRORS) this.errorCount++;
  }

  private countersOf(pool: string | undefined): PoolCounters {
    if (pool === undefined) return this.unrouted;
    let c = this.pools.get(pool);
    if (!c) this.pools.set(pool, (c = new PoolCounters()));
    return c;
  }
}

const EMPTY = new PoolCounters();

function ratesOf(ring: MinuteRing, now: number): PoolRates {
  const { requests, errors } = ring.totals(now);
  return { requests_per_min: requests, error_rate: requests === 0 ? 0 : Math.round((errors / requests) * 1000) / 1000 };
}

function clip(s: string | undefined): string | null {
  if (s === undefined || s === '') return null;
  return s.length > MAX_FIELD_CHARS ? `${s.slice(0, MAX_FIELD_CHARS)}…` : s;
}

function bump(map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}
