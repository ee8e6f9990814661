// @ts-check
/** The Overview section: the key figures of every pool together and their charts. */
import { $, cell, drawChart, setText } from './dom.js';
import { errorsByCode, fmtInt, fmtMs, fmtMsPair, fmtPct, fmtRate, historySeries, niceMax, sumValues } from './model.js';

/** @typedef {import('./api.js').Snapshot} Snapshot */
/** @typedef {import('./views.js').RenderContext} RenderContext */

/** @param {string} name @param {string} value @param {string} detail @param {boolean} [bad] */
function kpi(name, value, detail, bad = false) {
  const el = $(`.kpi[data-kpi="${name}"]`);
  setText(cell(el, '.value'), value);
  setText(cell(el, '.detail'), detail);
  el.classList.toggle('bad', bad);
}

/** @param {Snapshot} s @param {RenderContext} ctx */
export function renderKpis(s, ctx) {
  const o = s.stats.overall;
  const rpm = o ? o.requests_per_min : s.stats.pools.reduce((n, p) => n + p.requests_per_min, 0);
  kpi('rps', ctx.rps === null ? fmtRate(rpm / 60) : fmtRate(ctx.rps), `${fmtInt(rpm)} in the last minute`);
  const errorRate = o ? o.error_rate : null;
  kpi('error-rate', fmtPct(errorRate), 'of the last minute', (errorRate ?? 0) >= 0.05);
  const l = o?.latency_ms;
  kpi(
    'latency',
    l && l.samples > 0 ? fmtMsPair(l.p50, l.p95) : '–',
    l && l.samples > 0 ? `p99 ${fmtMs(l.p99)} · last minute` : 'none served in the last minute',
  );

  let queued = 0;
  let inFlight = 0;
  let waitP95 = 0;
  for (const p of s.stats.pools) {
    queued += p.queue_depth;
    inFlight += p.in_flight;
    waitP95 = Math.max(waitP95, p.queue_wait_ms.p95);
  }
  kpi('queue', fmtInt(queued), `wait p95 ${fmtMs(waitP95)}`);
  let busy = 0;
  let total = 0;
  for (const p of s.pools) {
    busy += p.metrics.slots.busy;
    total += p.metrics.slots.total;
  }
  kpi('in-flight', fmtInt(inFlight), `slots ${fmtInt(busy)} busy of ${fmtInt(total)}`);
  const draining = s.workers.filter((w) => w.draining).length;
  const ejected = s.workers.filter((w) => w.ejected).length;
  kpi('workers', fmtInt(s.workers.length), `${draining} draining · ${ejected} ejected`, s.workers.length > 0 && ejected === s.workers.length);
  let served = 0;
  let cancelled = 0;
  for (const p of s.stats.pools) {
    served += p.served;
    cancelled += p.cancelled;
  }
  kpi('served', fmtInt(served), `${fmtInt(cancelled)} cancelled · since start`);
  const byCode = errorsByCode(s.stats);
  kpi('errors', fmtInt(sumValues(byCode)), 'gateway errors since start');
}

/** @param {Snapshot} s @param {RenderContext} ctx */
export function renderCharts(s, ctx) {
  const series = historySeries(s.stats.overall?.history);
  const minutes = Math.round((series.rps.length * series.bucketSecs) / 60);
  const range = series.rps.length ? `last ${minutes} min` : '';

  const rpsMax = niceMax(series.rps, 1);
  chart(
    'rps',
    [{ values: series.rps, className: 'rps', area: true }],
    rpsMax,
    `max ${fmtRate(rpsMax)}/s · ${range}`,
    `Requests per second, ${range} in ${series.bucketSecs}-second steps: latest ${fmtRate(last(series.rps))}, peak ${fmtRate(peak(series.rps))}`,
  );

  const errMax = niceMax(series.errorRate, 0.05);
  chart(
    'errors',
    [{ values: series.errorRate, className: 'errors', area: true }],
    errMax,
    `max ${fmtPct(errMax)} · ${range}`,
    `Share of requests that ended with a 5xx, ${range}: latest ${fmtPct(last(series.errorRate))}, peak ${fmtPct(peak(series.errorRate))}`,
  );

  const latMax = niceMax([...series.p50, ...series.p95], 10);
  const served = series.p95.some((v) => v !== null);
  chart(
    'latency',
    [
      { values: series.p50, className: 'p50' },
      { values: series.p95, className: 'p95' },
    ],
    latMax,
    served ? `max ${fmtMs(latMax)}` : 'nothing served yet',
    `Latency of served requests, ${range}: latest p50 ${fmtMs(last(series.p50))}, p95 ${fmtMs(last(series.p95))}; peak p95 ${fmtMs(peak(series.p95))}`,
  );

  const q = ctx.queueSamples;
  const qMax = niceMax(q, 1);
  chart(
    'queue',
    [{ values: q, className: 'queue', area: true }],
    qMax,
    `max ${fmtInt(qMax)} · since page opened`,
    `Requests waiting in queues, one sample per update since the page opened: now ${fmtInt(last(q))}, peak ${fmtInt(peak(q))}`,
  );
}

/**
 * @param {string} name
 * @param {import('./dom.js').Series[]} series
 * @param {number} max
 * @param {string} range
 * @param {string} label
 */
function chart(name, series, max, range, label) {
  const fig = $(`.chart[data-chart="${name}"]`);
  const svg = fig.querySelector('svg');
  if (svg) drawChart(svg, series, max, label);
  setText(cell(fig, '.chart-range'), range);
}

/** @param {Array<number | null>} values */
export function last(values) {
  for (let i = values.length - 1; i >= 0; i--) {
    const v = values[i];
    if (v !== null) return v;
  }
  return null;
}

/** @param {Array<number | null>} values */
export function peak(values) {
  let m = null;
  for (const v of values) if (v !== null && (m === null || v > m)) m = v;
  return m;
}
