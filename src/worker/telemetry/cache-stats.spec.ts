import { llamaServerMetrics, llamaServerSlots, vllmMetrics } from '../../../test/worker/support/fake-cache-docs';
import { llamaServerCacheStats, parsePrometheus, vllmCacheStats } from './cache-stats';

describe('backend cache telemetry parsing', () => {
  it('reads Prometheus text: labels summed, comments, histograms and odd lines skipped', () => {
    const m = parsePrometheus('# HELP x y\nx{a="1"} 2\nx{a="2",b="}{ "} 3.5\ny 1e3 1712345678\nbroken\nz{le="+Inf"} NaN\n');
    expect(m.get('x')).toBe(5.5);
    expect(m.get('y')).toBe(1000);
    expect(m.has('z')).toBe(false);
  });

  it('llama-server: KV usage from kv_cache_usage_ratio, prefix hits from the slots’ cached prompt tokens', () => {
    const slots = llamaServerSlots([
      { nCtx: 4096, processing: true, prompt: [1000, 800] },
      { nCtx: 4096, processing: false, prompt: [200, 0] },
    ]);
    expect(llamaServerCacheStats(slots, llamaServerMetrics({ ratio: 0.375, kvTokens: 3072 }))).toEqual({
      kv_cache_usage_ratio: 0.375,
      prefix_cache_hit_ratio: 800 / 1200,
    });
  });

  it('llama-server builds without the ratio: KV tokens over the slots’ context; older /slots without prompt counts give no hit ratio', () => {
    const slots = llamaServerSlots([
      { nCtx: 2048, processing: true },
      { nCtx: 2048, processing: false },
    ]);
    expect(llamaServerCacheStats(slots, llamaServerMetrics({ kvTokens: 1024 }))).toEqual({ kv_cache_usage_ratio: 0.25 });
    expect(llamaServerCacheStats(slots, undefined)).toBeUndefined(); // --metrics off
    expect(llamaServerCacheStats('nonsense', 'garbage')).toBeUndefined();
  });

  it('vLLM V1: kv_cache_usage_perc, and the hit ratio of the prefix-cache counters since the last read', () => {
    const first = vllmCacheStats(vllmMetrics({ kv: 0.42, hits: 600, queries: 1000 }), undefined);
    expect(first.stats).toEqual({ kv_cache_usage_ratio: 0.42, prefix_cache_hit_ratio: 0.6 });
    const second = vllmCacheStats(vllmMetrics({ kv: 0.5, hits: 1500, queries: 2000 }), first.counters);
    expect(second.stats).toEqual({ kv_cache_usage_ratio: 0.5, prefix_cache_hit_ratio: 0.9 });
    // An engine restart resets the counters: read from zero again.
    const restarted = vllmCacheStats(vllmMetrics({ kv: 0.1, hits: 10, queries: 100 }), second.counters);
    expect(restarted.stats?.prefix_cache_hit_ratio).toBeCloseTo(0.1);
  });

  it('vLLM V0: gpu_cache_usage_perc and gpu_prefix_cache_hit_rate', () => {
    expect(vllmCacheStats(vllmMetrics({ kv: 0.8, hits: 1, queries: 4, v0: true }), undefined).stats).toEqual({
      kv_cache_usage_ratio: 0.8,
      prefix_cache_hit_ratio: 0.25,
    });
  });
});
