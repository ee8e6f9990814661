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

  constructor(@Inject(CLOCK) private readonly clock: Clock) {}

  /** A request finished with `status`; `code` when the gateway answered with an error. */
  finished(pool: string | undefined, status: number, code?: string): void {
    const c = this.countersOf(pool);
    c.lastMinute.add(this.clock.now(), status >= 500);
    if (code) bump(c.errorsByCode, code);
    else if (status === 499) c.cancelled++;
    else c.served++;
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
    const { requests, errors } = this.of(pool).lastMinute.totals(this.clock.now());
    return { requests_per_min: requests, error_rate: requests === 0 ? 0 : Math.round((errors / requests) * 1000) / 1000 };
  }

  /** A deleted provider's figures go with it. */
  forget(pool: string): void {
    this.pools.delete(pool);
  }

  private countersOf(pool: string | undefined): PoolCounters {
    if (pool === undefined) return this.unrouted;
    let c = this.pools.get(pool);
    if (!c) this.pools.set(pool, (c = new PoolCounters()));
    return c;
  }
}

const EMPTY = new PoolCounters();

function bump(map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}
