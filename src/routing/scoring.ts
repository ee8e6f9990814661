import type { CacheStats } from '../protocol';
import type { ScoringWeights } from '../config/sections/routing';
export { DEFAULT_WEIGHTS } from '../config/sections/routing';
export type { ScoringWeights } from '../config/sections/routing';

/** Priority a worker has when neither its provider nor the worker declares one. */
export const DEFAULT_PRIORITY = 50;

/**
 * A worker's routing priority (lower is preferred). A provider's configured `priority` is a floor:
 * its workers' self-declared priority may only rank them lower (a larger number), never above it,
 * so a worker's own claim cannot win it traffic over pools the operator ranked. A provider without
 * `priority` leaves the ranking to its workers' declarations (the routing specification's
 * `priority_only` story: the worker declaring 1 takes every request before the one declaring 2);
 * which models such workers may serve at all is decided by model ownership, not by priority.
 * A worker that declares nothing gets the floor, or `DEFAULT_PRIORITY`.
 */
export function effectivePriority(providerPriority: number | null | undefined, declared: number | undefined): number {
  if (providerPriority === null || providerPriority === undefined) return declared ?? DEFAULT_PRIORITY;
  return declared === undefined || !(declared > providerPriority) ? providerPriority : declared;
}

export interface ScoreInputs {
  /** Lower is preferred; clamped to 100. */
  priority: number;
  /** Requests the gateway has on the worker (assigned + held); clamped to 100. */
  pending: number;
  /** Moving average of time to first byte; 0 when there is no data yet. */
  latencyMs: number;
}

/**
 * The smart strategy's score, 0–100 (higher is better):
 * ((100 − min(priority,100))·w_p + (100 − min(pending,100))·w_l + (100 − min(⌊latency/10⌋,100))·w_lat) / 100.
 * Latency counts in whole 10 ms steps, as in the specification, so measurement jitter of a few
 * milliseconds does not reorder workers; the sum is not rounded down, so that one pending request
 * still separates two otherwise equal workers (with the default weights it is worth 0.3 points).
 */
export function score(inputs: ScoreInputs, weights: ScoringWeights): number {
  return scoreOf(inputs.priority, inputs.pending, inputs.latencyMs, weights);
}

/** `score` without an inputs object, for the strategy's loop over every candidate. */
export function scoreOf(priority: number, pending: number, latencyMs: number, weights: ScoringWeights): number {
  return (
    ((100 - clamp(priority)) * weights.priority + (100 - clamp(pending)) * weights.load + (100 - clamp(Math.floor(latencyMs / 10))) * weights.latency) / 100
  );
}

function clamp(v: number): number {
  return v > 100 ? 100 : v < 0 || !Number.isFinite(v) ? 0 : v;
}

/**
 * A worker's load as routing weighs it: the requests the gateway has on it, or — when its daemon
 * reports the backend's KV-cache usage (`cache_stats`) — that usage × its slots, if higher: a
 * backend whose cache is nearly full (long contexts, or work from outside the gateway) is as good
 * as busy. Workers that report nothing (ModelRelay daemons) are weighed as before.
 */
export function loadSignal(w: { readonly load: number; readonly maxConcurrent: number; readonly cacheStats?: CacheStats }): number {
  const kv = w.cacheStats?.kv_cache_usage_ratio;
  if (kv === undefined) return w.load;
  const byCache = kv * w.maxConcurrent;
  return byCache > w.load ? byCache : w.load;
}
