/** Times and retry hints in errors and headers, made safe to format whatever they were computed from. */

/** The longest retry hint an error carries (a limiter's own bound is 24 h past its window). */
export const MAX_RETRY_AFTER_MS = 7 * 24 * 60 * 60_000;

/** A retry hint as a whole number of ms in [1, MAX_RETRY_AFTER_MS], whatever it was computed from. */
export function boundedRetryMs(ms: number): number {
  return Number.isFinite(ms) ? Math.min(MAX_RETRY_AFTER_MS, Math.max(1, Math.ceil(ms))) : MAX_RETRY_AFTER_MS;
}

/**
 * An epoch-ms time as ISO 8601, clamped into what a Date can hold: building an error must never
 * throw (`new Date(9e20).toISOString()` does, and an error thrown while answering leaves the
 * client without an answer).
 */
export function safeIsoTime(ms: number): string {
  const MAX = 8_640_000_000_000_000;
  return new Date(Number.isFinite(ms) ? Math.min(MAX, Math.max(-MAX, ms)) : ms > 0 ? MAX : 0).toISOString();
}
