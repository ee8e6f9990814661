/** What a backend said about its prompt cache, read from the response headers a worker relayed. */
export interface CacheReport {
  /** True for a hit, false for a miss; undefined when the backend said neither. */
  hit?: boolean;
  /** Prompt tokens served from the cache; undefined when not reported (or not a whole number). */
  tokensReused?: number;
}

export const CACHE_HIT_HEADER = 'x-cache-hit';
export const CACHE_TOKENS_REUSED_HEADER = 'x-cache-tokens-reused';

const HIT = new Set(['true', '1', 'hit', 'yes']);
const MISS = new Set(['false', '0', 'miss', 'no']);
const WHOLE = /^\d{1,15}$/;

/**
 * Reads `x-cache-hit` leniently (true/false, 1/0, hit/miss, yes/no, any case; of a list such as
 * "HIT, MISS" the first value) and `x-cache-tokens-reused` (a whole number). Anything else is
 * ignored rather than guessed. Header names may come in any case.
 */
export function readCacheHeaders(headers: Record<string, string> | undefined): CacheReport {
  if (!headers) return {};
  const report: CacheReport = {};
  const hit = headerValue(headers, CACHE_HIT_HEADER);
  if (hit !== undefined) {
    const first = hit.split(',')[0].trim().toLowerCase();
    if (HIT.has(first)) report.hit = true;
    else if (MISS.has(first)) report.hit = false;
  }
  const reused = headerValue(headers, CACHE_TOKENS_REUSED_HEADER)?.trim();
  if (reused !== undefined && WHOLE.test(reused)) report.tokensReused = Number(reused);
  return report;
}

function headerValue(headers: Record<string, string>, name: string): string | undefined {
  const exact = headers[name];
  if (typeof exact === 'string') return exact;
  for (const key of Object.keys(headers)) {
    if (key.toLowerCase() === name && typeof headers[key] === 'string') return headers[key];
  }
  return undefined;
}
