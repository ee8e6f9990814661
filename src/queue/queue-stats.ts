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

/**
 * What the queue has been doing, per provider: how fast requests leave it for a worker and how
 * long they waited. Feeds the Retry-After advice of `queue_full` and the queue figures operators
 * see. Only requests that actually waited count.
 */
export class QueueStats {
  private readonly byProvider = new Map<string, Departures>();

  departed(provider: string, waitedMs: number, now: number): void {
    let d = this.byProvider.get(provider);
    if (!d) this.byProvider.set(provider, (d = new Departures()));
    d.add(now, waitedMs);
  }

  /**
   * How long a request arriving behind `position` others should wait before retrying: the time the
   * queue needs to drain that many at its observed rate, between 1 s and 60 s (1 s without data).
   */
  retryAfterMs(provider: string, position: number, now: number): number {
    const rate = this.byProvider.get(provider)?.ratePerMs(now);
    if (!rate) return MIN_RETRY_MS;
    return Math.round(Math.min(MAX_RETRY_MS, Math.max(MIN_RETRY_MS, position / rate)));
  }

  /**
   * How long until a request `position` places from the head of the queue leaves it for a worker,
   * at the rate requests have recently left (`position / rate`, unclamped); undefined until at
   * least two queued requests of the provider have departed.
   */
  predictedWaitMs(provider: string, position: number, now: number): number | undefined {
    const rate = this.byProvider.get(provider)?.ratePerMs(now);
    return rate ? Math.round(position / rate) : undefined;
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
