import type { CacheStats } from '../../protocol';

/**
 * The backend's cache state, read from the documents the engines serve (formats and sources in
 * docs/worker.md, "Cache telemetry"). Everything here is pure: the daemon fetches, these parse.
 */

/** Sums of each series by metric name (labels summed over) from a Prometheus text exposition. */
export function parsePrometheus(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const brace = line.indexOf('{');
    const space = line.indexOf(' ');
    let name: string;
    let rest: string;
    if (brace !== -1 && (space === -1 || brace < space)) {
      const close = line.lastIndexOf('}');
      if (close < brace) continue;
      name = line.slice(0, brace);
      rest = line.slice(close + 1).trim();
    } else {
      if (space === -1) continue;
      name = line.slice(0, space);
      rest = line.slice(space + 1).trim();
    }
    const value = Number(rest.split(/\s+/)[0]);
    if (!Number.isFinite(value)) continue;
    out.set(name, (out.get(name) ?? 0) + value);
  }
  return out;
}

function ratio(v: number | undefined): number | undefined {
  if (v === undefined || !Number.isFinite(v)) return undefined;
  return v < 0 ? 0 : v > 1 ? 1 : v;
}

function stats(kv: number | undefined, hit: number | undefined): CacheStats | undefined {
  const out: CacheStats = {};
  const k = ratio(kv);
  const h = ratio(hit);
  if (k !== undefined) out.kv_cache_usage_ratio = k;
  if (h !== undefined) out.prefix_cache_hit_ratio = h;
  return k === undefined && h === undefined ? undefined : out;
}

/**
 * llama-server: `GET /slots` (a JSON array, one object per slot with `n_ctx` and, in recent
 * builds, `n_prompt_tokens` and `n_prompt_tokens_cache` of the slot's last prompt) and
 * `GET /metrics` (with `--metrics`: `llamacpp:kv_cache_usage_ratio` in builds that still export it,
 * `llamacpp:kv_cache_tokens` in all). KV usage: the ratio when exported, else KV tokens over the
 * slots' summed context; prefix hit: cached prompt tokens over prompt tokens across slots.
 */
export function llamaServerCacheStats(slots: unknown, metricsText: string | undefined): CacheStats | undefined {
  const m = metricsText !== undefined ? parsePrometheus(metricsText) : undefined;
  let ctx = 0;
  let prompt = 0;
  let cached = 0;
  if (Array.isArray(slots)) {
    for (const s of slots) {
      if (typeof s !== 'object' || s === null) continue;
      const slot = s as Record<string, unknown>;
      if (typeof slot.n_ctx === 'number' && slot.n_ctx > 0) ctx += slot.n_ctx;
      if (typeof slot.n_prompt_tokens === 'number' && typeof slot.n_prompt_tokens_cache === 'number' && slot.n_prompt_tokens > 0) {
        prompt += slot.n_prompt_tokens;
        cached += Math.min(slot.n_prompt_tokens_cache, slot.n_prompt_tokens);
      }
    }
  }
  let kv = m?.get('llamacpp:kv_cache_usage_ratio');
  const tokens = m?.get('llamacpp:kv_cache_tokens');
  if (kv === undefined && tokens !== undefined && ctx > 0) kv = tokens / ctx;
  return stats(kv, prompt > 0 ? cached / prompt : undefined);
}

/** vLLM's prefix-cache counters as last read, so the hit ratio covers the time since then. */
export interface VllmCounters {
  hits: number;
  queries: number;
}

/**
 * vLLM `GET /metrics`: KV usage from `vllm:kv_cache_usage_perc` (V1 engine) or
 * `vllm:gpu_cache_usage_perc` (V0), both 0–1 despite the name; prefix hit ratio from the V1
 * counters `vllm:prefix_cache_hits_total` / `vllm:prefix_cache_queries_total` (tokens) over the
 * interval since `previous`, or V0's gauge `vllm:gpu_prefix_cache_hit_rate`. Series are summed over labels.
 */
export function vllmCacheStats(metricsText: string, previous: VllmCounters | undefined): { stats: CacheStats | undefined; counters: VllmCounters | undefined } {
  const m = parsePrometheus(metricsText);
  const kv = m.get('vllm:kv_cache_usage_perc') ?? m.get('vllm:gpu_cache_usage_perc');
  const hits = m.get('vllm:prefix_cache_hits_total') ?? m.get('vllm:prefix_cache_hits');
  const queries = m.get('vllm:prefix_cache_queries_total') ?? m.get('vllm:prefix_cache_queries');
  let hit = m.get('vllm:gpu_prefix_cache_hit_rate');
  let counters: VllmCounters | undefined;
  if (hits !== undefined && queries !== undefined) {
    counters = { hits, queries };
    // Counters restart with the engine: a drop means a new series, read from zero.
    const base = previous && queries >= previous.queries && hits >= previous.hits ? previous : { hits: 0, queries: 0 };
    const dq = queries - base.queries;
    if (dq > 0) hit = (hits - base.hits) / dq;
  }
  return { stats: stats(kv, hit), counters };
}
