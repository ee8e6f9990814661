/** Recent departures kept per provider: enough for a stable rate and a p95, bounded memory. */
const SAMPLES = 128;
const MIN_RETRY_MS = 1000;
const MAX_RETRY_MS = 60_000;

class Departures {
  readonly at = new Float64Array(SAMPLES);
  readonly waited = new Float64Array(SAMPLES);
  count = 0;
  next = 0;

  add(now: number, waitedMs: number): void {
    this.at[this.next] = now;
    this.waited[this.next] = waitedMs;
    this.next = (this.next + 1) % SAMPLES;
    if (this.count < SAMPLES) this.count++;
  }

  /** Requests leaving the queue per millisecond over the recent departures, undefined without data. */
  ratePerMs(now: number): number | undefined {
    if (this.count < 2) return undefined;
    const oldest = this.at[(this.next - this.count + SAMPLES) % SAMPLES];
    // A queue that stopped draining has a rate that falls with the time since anything left.
    const span = now - oldest;
    return span > 0 ? (this.count - 1) / span : undefined;
  }

  waits(): number[] {
    return Array.from(this.waited.subarray(0, this.count));
  }
}

/** Weight of the newest completion in the service-time average (about the last ten count). */
export const SERVICE_EWMA_ALPHA = 0.2;

/**
 * Service time per slot: an exponentially weighted moving average of how long a worker's slot was
 * busy with a request (assignment to completion), per pool and per model within it. Only time a
 * slot spent serving counts, so idle spells leave it unchanged.
 */
class ServiceTimes {
  private readonly byPool = new Map<string, number>();
  private readonly byModel = new Map<string, number>();

  add(pool: string, model: string, ms: number): void {
    ewma(this.byPool, pool, ms);
    ewma(this.byModel, `${pool}\u0000${model}`, ms);
  }

  /** The model's average on the pool, else the pool's (another model's requests), else undefined. */
  of(pool: string, model: string): number | undefined {
    return this.byModel.get(`${pool}\u0000${model}`) ?? this.byPool.get(pool);
  }
}

function ewma(map: Map<string, number>, key: string, ms: number): void {
  const prev = map.get(key);
  map.set(key, prev === undefined ? ms : prev + SERVICE_EWMA_ALPHA * (ms - prev));
}

/**
 * What the queue has been doing, per provider: how fast requests leave it for a worker and how
 * long they waited. Feeds the Retry-After advice of `queue_full` and the queue figures operators
 * see. Only requests that actually waited count.
 */
export class QueueStats {
  private readonly byProvider = new Map<string, Departures>();
  private readonly service = new ServiceTimes();

  /** A worker of `provider` completed a request for `model` that held its slot for `ms`. */
  served(provider: string, model: string, ms: number): void {
    if (ms >= 0 && Number.isFinite(ms)) this.service.add(provider, model, ms);
  }

  /** The observed service time per slot (EWMA) for `model` on `provider`; undefined before its first completion. */
  serviceMs(provider: string, model: string): number | undefined {
    return this.service.of(provider, model);
  }

  departed(provider: string, waitedMs: number, now: number): void {
    let d = this.byProvider.get(provider);
    if (!d) this.byProvider.set(provider, (d = new Departures()));
    d.add(now, waitedMs);
  }

  /**
   * How long a request arriving behind `position` others should wait before retrying: the time the
   * queue needs to drain that many at its observed rate, between 1 s and 60 s (1 s without data).
   */
  retryAfterMs(provider: string, position: number, now: number, elsewhereRate = 0): number {
    // In a cluster, the other replicas' queues drain too (their rates as last published).
    const rate = (this.byProvider.get(provider)?.ratePerMs(now) ?? 0) + elsewhereRate;
    if (!rate) return MIN_RETRY_MS;
    return Math.round(Math.min(MAX_RETRY_MS, Math.max(MIN_RETRY_MS, position / rate)));
  }

  /** Each provider's observed drain rate (requests per ms), where it has one. */
  rates(now: number): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [provider, d] of this.byProvider) {
      const rate = d.ratePerMs(now);
      if (rate) out[provider] = rate;
    }
    return out;
  }

  avgWaitMs(provider: string): number {
    const waits = this.byProvider.get(provider)?.waits() ?? [];
    return waits.length ? Math.round(waits.reduce((a, b) => a + b, 0) / waits.length) : 0;
  }

  p95WaitMs(provider: string): number {
    const waits = (this.byProvider.get(provider)?.waits() ?? []).sort((a, b) => a - b);
    return waits.length ? Math.round(waits[Math.min(waits.length - 1, Math.ceil(0.95 * waits.length) - 1)]) : 0;
  }
}
