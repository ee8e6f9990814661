// @ts-check
/**
 * Pure functions from admin API answers to what the page shows: no DOM here, so the browser tests
 * can call them directly.
 */

/** @typedef {import('./api.js').Stats} Stats */
/** @typedef {import('./api.js').History} History */
/** @typedef {import('./api.js').Worker} Worker */
/** @typedef {import('./api.js').PoolHealth} PoolHealth */
/** @typedef {{ label: string, tone: 'ok' | 'warn' | 'bad' | 'info' | 'neutral', title?: string }} Badge */

/** @param {Record<string, number> | undefined} byCode */
export function sumValues(byCode) {
  let n = 0;
  for (const v of Object.values(byCode ?? {})) n += v;
  return n;
}

/**
 * Requests the gateway finished since it started, every pool and unrouted ones: served, cancelled
 * and every error answer. The page's "requests/s now" is its change between two polls.
 * @param {Stats} stats
 */
export function finishedTotal(stats) {
  let n = sumValues(stats.unrouted?.errors_by_code);
  for (const p of stats.pools) n += p.served + p.cancelled + sumValues(p.errors_by_code);
  return n;
}

/**
 * Rate between two counter readings, per second; null when it cannot be told (first reading, the
 * gateway restarted and counters went back, no time passed).
 * @param {{ count: number, at: number, since: string } | null} prev
 * @param {{ count: number, at: number, since: string }} cur
 */
export function ratePerSecond(prev, cur) {
  if (!prev || prev.since !== cur.since || cur.count < prev.count) return null;
  const secs = (cur.at - prev.at) / 1000;
  if (!(secs > 0)) return null;
  return (cur.count - prev.count) / secs;
}

/**
 * The complete buckets of a history (the last one is still filling, and would read as a dip).
 * @param {History | undefined} h
 */
export function completeBuckets(h) {
  if (!h) return { bucketSecs: 10, requests: [], errors: [], p50: [], p95: [] };
  const n = Math.max(0, h.requests.length - 1);
  return {
    bucketSecs: h.bucket_secs,
    requests: h.requests.slice(0, n),
    errors: h.errors.slice(0, n),
    p50: h.latency_p50_ms.slice(0, n),
    p95: h.latency_p95_ms.slice(0, n),
  };
}

/**
 * Requests per second, and the 5xx share, of each complete bucket.
 * @param {History | undefined} h
 */
export function historySeries(h) {
  const b = completeBuckets(h);
  return {
    rps: b.requests.map((r) => r / b.bucketSecs),
    errorRate: b.requests.map((r, i) => (r === 0 ? null : b.errors[i] / r)),
    p50: b.p50,
    p95: b.p95,
    bucketSecs: b.bucketSecs,
  };
}

/**
 * Geometry of a line chart: an SVG path (`M x y L …`, broken at nulls, a lone point drawn as a
 * dot) over a width×height box, values from 0 (bottom) to `max` (top).
 * @param {Array<number | null>} values
 * @param {number} width
 * @param {number} height
 * @param {number} max
 */
export function linePath(values, width, height, max) {
  if (values.length === 0) return '';
  const step = values.length > 1 ? width / (values.length - 1) : 0;
  const top = max > 0 ? max : 1;
  let d = '';
  let pen = false;
  values.forEach((v, i) => {
    if (v === null || !Number.isFinite(v)) {
      pen = false;
      return;
    }
    const x = values.length > 1 ? i * step : width / 2;
    const y = height - (Math.min(v, top) / top) * (height - 2) - 1;
    d += `${pen ? 'L' : 'M'}${round1(x)} ${round1(y)} `;
    // A point between gaps would draw nothing: a tiny segment with round caps shows it as a dot.
    const next = values[i + 1];
    if (!pen && (next === undefined || next === null || !Number.isFinite(next))) d += 'h0.5 ';
    pen = true;
  });
  return d.trim();
}

/**
 * The filled area under a series (nulls read as zero), for the single-series charts.
 * @param {Array<number | null>} values
 * @param {number} width
 * @param {number} height
 * @param {number} max
 */
export function areaPath(values, width, height, max) {
  if (values.length < 2) return '';
  const line = linePath(
    values.map((v) => (v === null || !Number.isFinite(v) ? 0 : v)),
    width,
    height,
    max,
  );
  return `${line} L${width} ${height} L0 ${height} Z`;
}

/**
 * A chart's top: the series' maximum rounded up to a readable number (1, 2, 2.5, 5 × 10^n).
 * @param {Array<number | null>} values
 * @param {number} floor the smallest top (so that a flat zero line sits at the bottom)
 */
export function niceMax(values, floor) {
  let max = floor;
  for (const v of values) if (v !== null && Number.isFinite(v) && v > max) max = v;
  const exp = 10 ** Math.floor(Math.log10(max));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * exp >= max) return m * exp;
  return max;
}

/** @param {number} x */
function round1(x) {
  return Math.round(x * 10) / 10;
}

/** @param {number | null | undefined} n */
export function fmtInt(n) {
  return n === null || n === undefined || !Number.isFinite(n) ? '–' : Math.round(n).toLocaleString('en-US');
}

/** Requests per second: two decimals below 10, one below 100. @param {number | null | undefined} n */
export function fmtRate(n) {
  if (n === null || n === undefined || !Number.isFinite(n)) return '–';
  if (n === 0) return '0';
  if (n < 10) return n.toFixed(2);
  if (n < 100) return n.toFixed(1);
  return fmtInt(n);
}

/** A share as a percentage. @param {number | null | undefined} ratio */
export function fmtPct(ratio) {
  if (ratio === null || ratio === undefined || !Number.isFinite(ratio)) return '–';
  if (ratio === 0) return '0 %';
  const pct = ratio * 100;
  return `${pct < 10 ? pct.toFixed(1) : Math.round(pct)} %`;
}

/** Milliseconds, as seconds from 10 s on. @param {number | null | undefined} ms */
export function fmtMs(ms) {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '–';
  if (ms < 10_000) return `${Math.round(ms)} ms`;
  return `${(ms / 1000).toFixed(ms < 100_000 ? 1 : 0)} s`;
}

/**
 * Two durations sharing their unit when they can: `30 / 38 ms`.
 * @param {number | null | undefined} a
 * @param {number | null | undefined} b
 */
export function fmtMsPair(a, b) {
  if (a !== null && a !== undefined && b !== null && b !== undefined && a < 10_000 && b < 10_000) return `${Math.round(a)} / ${Math.round(b)} ms`;
  return `${fmtMs(a)} / ${fmtMs(b)}`;
}

/**
 * How long ago, in words an operator reads at a glance.
 * @param {string} iso
 * @param {number} now
 */
export function fmtAgo(iso, now) {
  const secs = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (!Number.isFinite(secs)) return '–';
  if (secs < 60) return `${secs} s ago`;
  if (secs < 3600) return `${Math.floor(secs / 60)} min ago`;
  if (secs < 86400) return `${Math.floor(secs / 3600)} h ${Math.floor((secs % 3600) / 60)} min ago`;
  return `${Math.floor(secs / 86400)} d ago`;
}

/** @param {string} iso */
export function fmtTime(iso) {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleTimeString('en-GB', { hour12: false });
}

/**
 * What a worker is doing, written out (colour only helps).
 * @param {Worker} w
 * @param {number} now
 * @returns {Badge[]}
 */
export function workerBadges(w, now) {
  /** @type {Badge[]} */
  const out = [];
  if (w.draining) out.push({ label: 'Draining', tone: 'warn' });
  if (w.cordon === 'worker') out.push({ label: 'Cordoned', tone: 'bad', title: 'Its name is refused until undrain' });
  if (w.cordon === 'pool') out.push({ label: 'Pool cordoned', tone: 'bad', title: 'Its pool is drained until undrain' });
  if (w.ejected) {
    const until = w.ejected_until ? Math.max(0, Math.round((Date.parse(w.ejected_until) - now) / 1000)) : null;
    out.push({ label: until === null ? 'Ejected' : `Ejected ${until} s`, tone: 'bad', title: 'Taken out of rotation after failures' });
  }
  if (!w.ejected && w.consecutive_failures > 0)
    out.push({ label: `${w.consecutive_failures} failure${w.consecutive_failures === 1 ? '' : 's'}`, tone: 'warn' });
  if (out.length === 0) out.push({ label: 'Serving', tone: 'ok' });
  return out;
}

/**
 * A pool's state, written out.
 * @param {PoolHealth} p
 * @returns {Badge[]}
 */
export function poolBadges(p) {
  /** @type {Badge[]} */
  const out = [];
  if (p.draining) out.push({ label: 'Drained', tone: 'bad', title: p.cordon ? `Cordoned since ${p.cordon.since}: ${p.cordon.reason}` : undefined });
  if (!p.enabled) out.push({ label: 'Disabled', tone: 'neutral' });
  if (p.ready) out.push({ label: 'Ready', tone: 'ok' });
  else if (!p.draining && p.enabled) out.push({ label: p.live ? 'Not ready' : 'No workers', tone: p.live ? 'warn' : 'neutral' });
  return out;
}

/**
 * Error counts by code as one short line, largest first.
 * @param {Record<string, number>} byCode
 * @param {number} [limit]
 */
export function codesLine(byCode, limit = 6) {
  const entries = Object.entries(byCode)
    .filter(([, n]) => n > 0)
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  if (entries.length === 0) return '';
  const shown = entries.slice(0, limit).map(([code, n]) => `${code} ${fmtInt(n)}`);
  if (entries.length > limit) shown.push(`+${entries.length - limit} more`);
  return shown.join(' · ');
}

/**
 * Every pool's errors by code, plus unrouted ones, added up.
 * @param {Stats} stats
 */
export function errorsByCode(stats) {
  /** @type {Record<string, number>} */
  const out = {};
  const add = (/** @type {Record<string, number>} */ m) => {
    for (const [k, v] of Object.entries(m)) out[k] = (out[k] ?? 0) + v;
  };
  for (const p of stats.pools) add(p.errors_by_code);
  add(stats.unrouted?.errors_by_code ?? {});
  return out;
}

/**
 * A unique, stable key per recent error (entries never change once listed), so the table keeps
 * the rows it has — and a selection in them — across polls.
 * @param {import('./api.js').RecentError[]} errors
 */
export function errorKeys(errors) {
  /** @type {Map<string, number>} */
  const seen = new Map();
  /** @type {string[]} */
  const keys = new Array(errors.length);
  // Numbered from the oldest: a new duplicate at the top does not renumber the rows below it.
  for (let i = errors.length - 1; i >= 0; i--) {
    const e = errors[i];
    const base = `${e.at}|${e.correlation_id ?? ''}|${e.status}|${e.code ?? ''}|${e.pool ?? ''}`;
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    keys[i] = `${base}#${n}`;
  }
  return keys;
}
