import { collectDefaultMetrics, Registry } from 'prom-client';

/**
 * One registry per application instance instead of prom-client's global one, so several gateways
 * in one process (integration tests) never collide with "metric already registered".
 */
export function createMetricsRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return registry;
}

type Labels<L extends string> = Partial<Record<L, string | number>>;
interface Series<L extends string> {
  labels: Labels<L>;
  value: number;
  dirty: boolean;
}

/**
 * Updates of a counter's or gauge's hot series, applied to prom-client when the metric is collected
 * (every read goes through collect: /metrics, `registry.metrics()`, `metric.get()`).
 *
 * prom-client checks and hashes the label object on every `inc`/`set` (and `labels(...)` children
 * do the same per call); at one to several updates per relayed request that was a measurable share
 * of the gateway's CPU (docs/benchmarks.md, "Issue 17"). Here a request pays a Map lookup by a key
 * the caller builds from the label values; a scrape pays one prom-client call per changed series.
 * What a scrape shows is the same: counters' sums, gauges' last values, series in order of first use.
 */
export class DeferredSeries<L extends string> {
  private readonly series = new Map<string, Series<L>>();

  /** `add` sums updates (counters), `set` keeps the last (gauges). */
  constructor(private readonly mode: 'add' | 'set') {}

  /** `key` must identify the label values; `labels` is called only for a key not seen before. */
  update(key: string, labels: () => Labels<L>, value: number): void {
    let s = this.series.get(key);
    if (s === undefined) {
      s = { labels: labels(), value: 0, dirty: false };
      this.series.set(key, s);
    }
    s.value = this.mode === 'add' ? s.value + value : value;
    s.dirty = true;
  }

  /** Hands each series changed since the last flush to `apply` (a counter's inc, a gauge's set). */
  flush(apply: (labels: Labels<L>, value: number) => void): void {
    for (const s of this.series.values()) {
      if (!s.dirty) continue;
      s.dirty = false;
      const value = s.value;
      if (this.mode === 'add') s.value = 0;
      apply(s.labels, value);
    }
  }
}
