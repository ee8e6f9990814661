import { collectDefaultMetrics, Histogram, Registry } from 'prom-client';

/**
 * One registry per application instance instead of prom-client's global one, so several gateways
 * in one process (integration tests) never collide with "metric already registered".
 */
export function createMetricsRegistry(defaultLabels?: Record<string, string>): Registry {
  const registry = new Registry();
  if (defaultLabels) registry.setDefaultLabels(defaultLabels);
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

/* prom-client's label hash, so a series is found where prom-client itself keeps it. */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const promUtil = require('prom-client/lib/util') as { hashObject?: (labels: object, names?: string[]) => string };

interface HistogramEntry {
  bucketValues: Record<string, number>;
  sum: number;
  count: number;
}
interface HistogramInternals {
  hashMap: Record<string, HistogramEntry | undefined>;
  upperBounds: readonly number[];
  sortedLabelNames: string[];
}

/**
 * Observations of a histogram's hot series without prom-client's per-call label work.
 *
 * `Histogram.observe` (and a `labels(...)` child's) checks the label object against the label
 * names and hashes it on every call; three observations per relayed request made that about 2 %
 * of the gateway's CPU (docs/benchmarks.md, "Issue 17"). Here a series is looked up by a key the
 * caller builds; its first observation (and any after a reset or removal) goes through
 * prom-client, later ones add to the very record prom-client keeps for it, as prom-client would:
 * sum, count, and the first bucket whose upper bound is not below the value. Exposition, get(),
 * reset() and remove() are prom-client's own. A non-finite value goes to prom-client, which
 * throws as before. If prom-client's internals are not as expected (another version), every
 * observation goes to prom-client; metrics-registry.spec.ts compares both paths' output.
 */
export class HistogramSeries<L extends string> {
  private readonly series = new Map<string, { labels: Labels<L>; hash: string | undefined }>();
  private readonly internals: HistogramInternals | undefined;
  /** The bucket record's keys, i.e. each upper bound as a property name, converted once. */
  private readonly bucketKeys: readonly string[] = [];

  constructor(private readonly histogram: Histogram<L>) {
    const h = histogram as unknown as Partial<HistogramInternals> & { enableExemplars?: boolean };
    const usable =
      typeof promUtil.hashObject === 'function' &&
      typeof h.hashMap === 'object' &&
      Array.isArray(h.upperBounds) &&
      Array.isArray(h.sortedLabelNames) &&
      !h.enableExemplars;
    this.internals = usable ? (h as HistogramInternals) : undefined;
    if (this.internals) this.bucketKeys = this.internals.upperBounds.map(String);
  }

  /** `key` must identify the label values; `labels` is called only for a key not seen before. */
  observe(key: string, labels: () => Labels<L>, value: number): void {
    let s = this.series.get(key);
    if (s === undefined) {
      const l = labels();
      s = { labels: l, hash: this.internals ? promUtil.hashObject!(l, this.internals.sortedLabelNames) : undefined };
      this.series.set(key, s);
    }
    const entry = s.hash === undefined ? undefined : this.internals!.hashMap[s.hash];
    if (entry === undefined || !Number.isFinite(value)) {
      this.histogram.observe(s.labels, value);
      return;
    }
    entry.sum += value;
    entry.count += 1;
    const bounds = this.internals!.upperBounds;
    for (let i = 0; i < bounds.length; i++) {
      if (value <= bounds[i]) {
        entry.bucketValues[this.bucketKeys[i]] += 1;
        return;
      }
    }
  }
}
