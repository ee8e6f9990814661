import type { TokenCounts } from './messages';

/**
 * Bounds on every number a worker frame carries (documented in docs/protocol.md#numbers). A worker
 * is untrusted input: whatever it sends, the numbers that reach limits, metrics, usage rows and
 * dates are finite whole numbers within these bounds, so no arithmetic on them can overflow into
 * an invalid Date or lose precision (every bound times a day in ms stays below 2^53).
 */
export const WorkerNumberBounds = {
  /** One request's prompt, completion or total tokens (no model has a context near 100M tokens). */
  tokens: 100_000_000,
  /** A worker's reported in-flight load. */
  load: 65_536,
  /** `max_concurrent` before the registry's own ceiling (which lowers it further, with a warning). */
  maxConcurrent: 1_000_000,
  /** A routing priority hint. */
  priority: 1_000_000,
  /** A model's context length hint, in tokens. */
  contextLength: 100_000_000,
  /** Epoch ms (the largest time a JavaScript Date can hold). */
  epochMs: 8_640_000_000_000_000,
  /** Lifecycle figures: seconds (a year), megabytes (an exabyte), entries. */
  etaSecs: 31_536_000,
  megabytes: 1_000_000_000_000,
  entries: 1_000_000_000_000,
} as const;

/**
 * A JSON number clamped into [min, max] and rounded to a whole number (up, so a load or a token
 * count is never under-reported); `undefined` for anything that is not a number. JSON.parse turns
 * 1e400 into Infinity, which clamps like any other huge value.
 */
export function clampInt(v: unknown, min: number, max: number): number | undefined {
  if (typeof v !== 'number' || Number.isNaN(v)) return undefined;
  if (v <= min) return min;
  if (v >= max) return max;
  return Math.min(max, Math.ceil(v));
}

/** Like clampInt, without rounding (lifecycle figures such as 0.5 MB stay fractional). */
export function clampNumber(v: unknown, min: number, max: number): number | undefined {
  if (typeof v !== 'number' || Number.isNaN(v)) return undefined;
  return Math.min(max, Math.max(min, v));
}

/** Depth of nesting at which a relayed document is ignored (serialising it would recurse this deep). */
export const MAX_DOCUMENT_DEPTH = 32;

/** Whether `v` nests objects or arrays deeper than `max` (checked without recursion). */
export function nestedDeeperThan(v: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[v, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (!node || typeof node !== 'object') continue;
    if (depth > max) return true;
    for (const child of Object.values(node as object)) if (child && typeof child === 'object') stack.push([child, depth + 1]);
  }
  return false;
}

/** `gpu_time_ms` of `response_complete` (feature `gpu_time`) is a hint: clamped into [0, 7 days]; a non-number is left out, not an error. */
export function optGpuTime(o: Record<string, unknown>): number | undefined {
  return clampInt(o.gpu_time_ms, 0, 7 * 24 * 3600_000);
}

const TOKEN_COUNT_FIELDS = ['prompt_tokens', 'completion_tokens', 'total_tokens'] as const;

/**
 * Token counts are an accounting hint: each count is clamped into [0, WorkerNumberBounds.tokens]
 * (a huge, negative or fractional count cannot reach the limiters, metrics or usage rows
 * unbounded), and anything that is not a number, like a `token_counts` that is not an object, is
 * ignored rather than costing the response it came with.
 */
export function optTokenCounts(o: Record<string, unknown>): TokenCounts | undefined {
  const v = o.token_counts;
  if (!v || typeof v !== 'object' || Array.isArray(v)) return undefined;
  const t = v as Record<string, unknown>;
  const counts: TokenCounts = {};
  for (const field of TOKEN_COUNT_FIELDS) {
    const n = clampInt(t[field], 0, WorkerNumberBounds.tokens);
    if (n !== undefined) counts[field] = n;
  }
  return counts;
}
