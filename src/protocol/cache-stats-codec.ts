import { CacheStats } from './messages';

/**
 * `pong.cache_stats` (negotiated): informational like the timestamp, so a malformed value is
 * dropped rather than closing the link; each ratio is clamped to 0–1, a non-number is left out.
 */
export function optCacheStats(v: unknown): CacheStats | undefined {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return undefined;
  const o = v as Record<string, unknown>;
  const kv = ratio(o.kv_cache_usage_ratio);
  const hit = ratio(o.prefix_cache_hit_ratio);
  if (kv === undefined && hit === undefined) return undefined;
  const out: CacheStats = {};
  if (kv !== undefined) out.kv_cache_usage_ratio = kv;
  if (hit !== undefined) out.prefix_cache_hit_ratio = hit;
  return out;
}

function ratio(v: unknown): number | undefined {
  if (typeof v !== 'number' || !Number.isFinite(v)) return undefined;
  return v < 0 ? 0 : v > 1 ? 1 : v;
}
