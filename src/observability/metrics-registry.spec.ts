import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { DeferredSeries, HistogramSeries } from './metrics-registry';

const BUCKETS = [0.001, 0.01, 0.1, 1, 10];
/** Bounds themselves, values between, above the last bound, zero and negatives. */
const VALUES = [0, 0.001, 0.0005, 0.01, 0.05, 0.1, 0.99, 1, 1.5, 10, 11, 1000, -1, 0.1 + 0.2];

function histogramIn(registry: Registry): Histogram<'provider' | 'model'> {
  return new Histogram({ name: 'h_seconds', help: 'h', labelNames: ['provider', 'model'], buckets: BUCKETS, registers: [registry] });
}

describe('HistogramSeries', () => {
  it('exposes exactly what prom-client would for the same observations', async () => {
    const plainRegistry = new Registry();
    const seriesRegistry = new Registry();
    const plain = histogramIn(plainRegistry);
    const viaSeries = histogramIn(seriesRegistry);
    const series = new HistogramSeries(viaSeries);
    expect((series as unknown as { internals: unknown }).internals).toBeDefined(); // the fast path is in use
    const labelSets = [
      { provider: 'p1', model: 'm1' },
      { provider: 'p2', model: 'm1' },
      { provider: 'p1', model: 'm2' },
    ];
    for (let round = 0; round < 3; round++) {
      for (const [i, v] of VALUES.entries()) {
        const labels = labelSets[(i + round) % labelSets.length];
        plain.observe(labels, v);
        series.observe(`${labels.provider}\0${labels.model}`, () => ({ ...labels }), v);
      }
    }
    expect(await seriesRegistry.metrics()).toBe(await plainRegistry.metrics());

    // After a reset prom-client starts over, and so do the series.
    plain.reset();
    viaSeries.reset();
    plain.observe({ provider: 'p2', model: 'm1' }, 0.5);
    series.observe('p2\0m1', () => ({ provider: 'p2', model: 'm1' }), 0.5);
    plain.observe({ provider: 'p2', model: 'm1' }, 5);
    series.observe('p2\0m1', () => ({ provider: 'p2', model: 'm1' }), 5);
    expect(await seriesRegistry.metrics()).toBe(await plainRegistry.metrics());
  });

  it('throws on a value that is not a finite number, as prom-client does', () => {
    const series = new HistogramSeries(histogramIn(new Registry()));
    series.observe('a\0b', () => ({ provider: 'a', model: 'b' }), 1);
    expect(() => series.observe('a\0b', () => ({ provider: 'a', model: 'b' }), Number.NaN)).toThrow(TypeError);
    expect(() => series.observe('a\0b', () => ({ provider: 'a', model: 'b' }), Number.POSITIVE_INFINITY)).toThrow(TypeError);
  });
});

describe('DeferredSeries', () => {
  it('gives a counter the same sums and a gauge the same last values as direct updates', async () => {
    const direct = new Registry();
    const deferred = new Registry();
    const c1 = new Counter({ name: 'c_total', help: 'c', labelNames: ['a', 'b'], registers: [direct] });
    const g1 = new Gauge({ name: 'g', help: 'g', labelNames: ['a'], registers: [direct] });
    const adds = new DeferredSeries<'a' | 'b'>('add');
    const sets = new DeferredSeries<'a'>('set');
    const c2 = new Counter({ name: 'c_total', help: 'c', labelNames: ['a', 'b'], registers: [deferred], collect: () => adds.flush((l, n) => c2.inc(l, n)) });
    const g2 = new Gauge({ name: 'g', help: 'g', labelNames: ['a'], registers: [deferred], collect: () => sets.flush((l, v) => g2.set(l, v)) });
    const steps: Array<[string, string, number]> = [
      ['x', 'y', 1],
      ['x', 'z', 2],
      ['x', 'y', 3],
      ['w', 'y', 1],
    ];
    for (const [round] of [[0], [1]]) {
      for (const [a, b, n] of steps) {
        c1.inc({ a, b }, n + round);
        adds.update(`${a}\0${b}`, () => ({ a, b }), n + round);
        g1.set({ a }, n * 10 + round);
        sets.update(a, () => ({ a }), n * 10 + round);
      }
      // Read between rounds too: a flush must not count anything twice.
      expect(await deferred.metrics()).toBe(await direct.metrics());
    }
    expect((await c2.get()).values).toEqual((await c1.get()).values);
  });
});
