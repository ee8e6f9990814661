// @ts-check
/** Renders a snapshot of the admin API into the page, updating rows in place. */
import { $, button, cell, h, setAttr, setBadges, setText, svgEl, syncRows } from './dom.js';
import {
  codesLine,
  errorKeys,
  errorsByCode,
  fmtAgo,
  fmtInt,
  fmtMs,
  fmtMsPair,
  fmtPct,
  fmtRate,
  fmtTime,
  historySeries,
  linePath,
  niceMax,
  poolBadges,
  workerBadges,
} from './model.js';
import { last, peak, renderCharts, renderKpis } from './overview.js';

/** @typedef {import('./api.js').Snapshot} Snapshot */
/** @typedef {import('./api.js').Worker} Worker */
/** @typedef {import('./api.js').PoolHealth} PoolHealth */
/** @typedef {import('./api.js').PoolStats} PoolStats */
/** @typedef {import('./api.js').Provider} Provider */
/** @typedef {import('./api.js').RecentError} RecentError */
/** @typedef {{ health: PoolHealth, stats: PoolStats | undefined, provider: Provider | undefined }} PoolRow */
/**
 * @typedef {{
 *   workerDrain: (w: Worker, button: HTMLButtonElement) => void,
 *   workerUndrain: (id: string, label: string, button: HTMLButtonElement) => void,
 *   refreshModels: (w: Worker, button: HTMLButtonElement) => void,
 *   poolDrain: (pool: string, button: HTMLButtonElement) => void,
 *   poolUndrain: (pool: string, button: HTMLButtonElement) => void,
 * }} Actions
 * @typedef {{ now: number, rps: number | null, queueSamples: number[], actions: Actions }} RenderContext
 */

/** The item each row shows now: buttons act on the latest data, not on what the row was created with. */
/** @type {WeakMap<HTMLElement, any>} */
const rowItems = new WeakMap();

/**
 * @param {Snapshot} s
 * @param {RenderContext} ctx
 */
export function render(s, ctx) {
  renderKpis(s, ctx);
  renderCharts(s, ctx);
  renderPools(s, ctx);
  renderWorkers(s, ctx);
  renderErrors(s, ctx);
  renderCordons(s, ctx);
}

/** Empties every data area (after logout nothing of the last session stays in the page). */
export function clearAll() {
  for (const sel of ['#pools-table tbody', '#workers-table tbody', '#errors-table tbody', '#cordons-list']) $(sel).replaceChildren();
  for (const kpi of document.querySelectorAll('.kpi')) {
    setText(cell(kpi, '.value'), '–');
    setText(cell(kpi, '.detail'), '');
    kpi.classList.remove('bad');
  }
  for (const svg of document.querySelectorAll('.chart svg')) svg.replaceChildren();
  for (const range of document.querySelectorAll('.chart-range')) range.textContent = '';
  setText($('#errors-by-code'), '');
}

/** @param {Snapshot} s @param {RenderContext} ctx */
function renderPools(s, ctx) {
  const stats = new Map(s.stats.pools.map((p) => [p.pool, p]));
  const providers = new Map(s.providers.map((p) => [p.name, p]));
  /** @type {PoolRow[]} */
  const rows = s.pools.map((health) => ({ health, stats: stats.get(health.id), provider: providers.get(health.id) }));
  const tbody = $('#pools-table tbody');
  syncRows(
    tbody,
    rows,
    (r) => r.health.id,
    (r) => createPoolRow(r, ctx.actions),
    updatePoolRow,
    $('#pools-title'),
  );
  $('#pools-empty').hidden = rows.length > 0;
}

/** @param {PoolRow} r @param {Actions} actions */
function createPoolRow(r, actions) {
  const toggle = h('button', { type: 'button', class: 'small', 'data-action': 'pool-drain' }, 'Drain');
  const tr = h(
    'tr',
    { 'data-pool': r.health.id },
    h('th', { scope: 'row', class: 'name' }, h('strong', {}, r.health.id), h('span', { class: 'sub source' })),
    h('td', { class: 'state' }, h('span', { class: 'badges' })),
    h('td', { class: 'num workers' }),
    h('td', { class: 'num slots' }),
    h('td', { class: 'num queue' }),
    h('td', { class: 'num wait' }),
    h('td', { class: 'num rpm' }),
    h('td', { class: 'trend' }),
    h('td', { class: 'num errors' }, h('span', { class: 'rate' }), h('span', { class: 'sub codes' })),
    h('td', { class: 'num latency' }),
    h('td', { class: 'num served' }),
    h('td', {}, h('div', { class: 'actions' }, toggle)),
  );
  const svg = /** @type {SVGSVGElement} */ (svgEl('svg', { class: 'spark', viewBox: '0 0 110 22', preserveAspectRatio: 'none', role: 'img' }));
  cell(tr, '.trend').append(svg);
  toggle.addEventListener('click', () => {
    /** @type {PoolRow} */
    const cur = rowItems.get(tr);
    if (cur.health.draining) actions.poolUndrain(cur.health.id, toggle);
    else actions.poolDrain(cur.health.id, toggle);
  });
  return tr;
}

/** @param {HTMLElement} tr @param {PoolRow} r */
function updatePoolRow(tr, r) {
  rowItems.set(tr, r);
  const { health: p, stats: st, provider } = r;
  setText(cell(tr, '.source'), provider?.source ? `from ${provider.source}` : '');
  setBadges(cell(tr, '.badges'), poolBadges(p));
  setText(cell(tr, '.workers'), fmtInt(p.metrics.workers));
  setText(cell(tr, '.slots'), `${fmtInt(p.metrics.slots.busy)} / ${fmtInt(p.metrics.slots.total)}`);
  setText(cell(tr, '.queue'), provider ? `${fmtInt(p.metrics.queue_depth)} / ${fmtInt(provider.max_queue_len)}` : fmtInt(p.metrics.queue_depth));
  setText(cell(tr, '.wait'), st ? fmtMsPair(st.queue_wait_ms.avg, st.queue_wait_ms.p95) : '–');
  setText(cell(tr, '.rpm'), fmtInt(p.metrics.requests_per_min));
  setText(cell(tr, '.rate'), fmtPct(p.metrics.error_rate));
  setText(cell(tr, '.codes'), st ? codesLine(st.errors_by_code, 2) : '');
  const l = st?.latency_ms;
  setText(cell(tr, '.latency'), l && l.samples > 0 ? fmtMsPair(l.p50, l.p95) : '–');
  setText(cell(tr, '.served'), st ? fmtInt(st.served) : '–');

  const series = historySeries(st?.history);
  const spark = tr.querySelector('svg.spark');
  if (spark) {
    const d = linePath(series.rps, 110, 22, niceMax(series.rps, 0.1));
    let path = spark.querySelector('path');
    if (!path) spark.append((path = /** @type {SVGPathElement} */ (svgEl('path', { d: '' }))));
    setAttr(path, 'd', d);
    setAttr(
      spark,
      'aria-label',
      `Requests per second of pool ${p.id} over the last minutes: latest ${fmtRate(last(series.rps))}, peak ${fmtRate(peak(series.rps))}`,
    );
  }

  const toggle = button(tr, 'button[data-action]');
  setText(toggle, p.draining ? 'Undrain' : 'Drain');
  setAttr(toggle, 'data-action', p.draining ? 'pool-undrain' : 'pool-drain');
  setAttr(toggle, 'aria-label', p.draining ? `Undrain pool ${p.id}` : `Drain pool ${p.id}`);
  toggle.classList.toggle('danger', !p.draining);
}

/** @param {Snapshot} s @param {RenderContext} ctx */
function renderWorkers(s, ctx) {
  const workers = [...s.workers].sort((a, b) => a.provider.localeCompare(b.provider) || a.name.localeCompare(b.name) || a.id.localeCompare(b.id));
  // Every worker names its replica, but one gateway's (its INSTANCE_ID) is the same on every row:
  // the column shows only when the listed workers are connected to more than one replica (cluster mode).
  const showReplica = new Set(workers.map((w) => w.replica)).size > 1;
  $('#workers-replica-col').hidden = !showReplica;
  syncRows(
    $('#workers-table tbody'),
    workers,
    (w) => w.id,
    (w) => createWorkerRow(w, ctx.actions),
    (tr, w) => updateWorkerRow(tr, w, ctx.now, showReplica),
    $('#workers-title'),
  );
  $('#workers-empty').hidden = workers.length > 0;
}

/** @param {Worker} w @param {Actions} actions */
function createWorkerRow(w, actions) {
  const toggle = h('button', { type: 'button', class: 'small danger', 'data-action': 'worker-drain' }, 'Drain');
  const refresh = h('button', { type: 'button', class: 'small secondary', 'data-action': 'refresh-models' }, 'Refresh models');
  const tr = h(
    'tr',
    { 'data-worker-id': w.id },
    h('th', { scope: 'row', class: 'name' }, h('strong', { class: 'worker-name' }), h('span', { class: 'sub mono worker-id' })),
    h('td', { class: 'pool' }),
    h('td', { class: 'replica mono', hidden: true }),
    h('td', { class: 'models' }, h('span', { class: 'model-list' }), h('span', { class: 'sub runner' })),
    h('td', { class: 'num load' }, h('span', { class: 'slots' }), h('span', { class: 'sub held' })),
    h('td', { class: 'state' }, h('span', { class: 'badges' })),
    h('td', { class: 'num latency' }),
    h('td', { class: 'connected' }),
    h('td', {}, h('div', { class: 'actions' }, toggle, refresh)),
  );
  toggle.addEventListener('click', () => {
    /** @type {Worker} */
    const cur = rowItems.get(tr);
    if (cur.cordon === 'worker') actions.workerUndrain(cur.id, `worker ${cur.name}`, toggle);
    else actions.workerDrain(cur, toggle);
  });
  refresh.addEventListener('click', () => actions.refreshModels(rowItems.get(tr), refresh));
  return tr;
}

/** @param {HTMLElement} tr @param {Worker} w @param {number} now @param {boolean} showReplica */
function updateWorkerRow(tr, w, now, showReplica) {
  rowItems.set(tr, w);
  setText(cell(tr, '.worker-name'), w.name);
  setText(cell(tr, '.worker-id'), w.id);
  setText(cell(tr, '.pool'), w.provider);
  const replica = cell(tr, '.replica');
  replica.hidden = !showReplica;
  setText(replica, w.replica ?? '');
  setText(cell(tr, '.model-list'), w.models.length ? w.models.join(', ') : '(none)');
  setText(cell(tr, '.runner'), w.runner ? `${w.runner.type}${w.runner.version ? ` ${w.runner.version}` : ''}` : '');
  setText(cell(tr, '.slots'), `${fmtInt(w.in_flight)} / ${fmtInt(w.max_concurrent)}`);
  const extra = [];
  if (w.held_slots > 0) extra.push(`${w.held_slots} held`);
  if (w.load !== w.in_flight) extra.push(`reports ${w.load}`);
  // The backend's cache state, from daemons that report it (negotiated cache_stats).
  const cache = w.cache_stats;
  if (cache?.kv_cache_usage_ratio !== undefined) extra.push(`KV cache ${Math.round(cache.kv_cache_usage_ratio * 100)}%`);
  if (cache?.prefix_cache_hit_ratio !== undefined) extra.push(`prefix hits ${Math.round(cache.prefix_cache_hit_ratio * 100)}%`);
  setText(cell(tr, '.held'), extra.join(' · '));
  setBadges(cell(tr, '.badges'), workerBadges(w, now));
  setText(cell(tr, '.latency'), fmtMs(w.latency_ms));
  setText(cell(tr, '.connected'), fmtAgo(w.connected_at, now));

  const toggle = button(tr, 'button[data-action^="worker-"]');
  const undrain = w.cordon === 'worker';
  // Draining without a cordon (undrained, still finishing) or inside a drained pool: nothing to do here.
  const disabled = !undrain && (w.draining || w.cordon === 'pool');
  setText(toggle, undrain ? 'Undrain' : 'Drain');
  setAttr(toggle, 'data-action', undrain ? 'worker-undrain' : 'worker-drain');
  setAttr(toggle, 'aria-label', `${undrain ? 'Undrain' : 'Drain'} worker ${w.name}`);
  setAttr(toggle, 'title', w.cordon === 'pool' ? 'Its pool is drained: undrain the pool' : w.draining && !undrain ? 'Already draining' : null);
  toggle.classList.toggle('danger', !undrain);
  toggle.disabled = disabled;
  const refresh = button(tr, 'button[data-action="refresh-models"]');
  setAttr(refresh, 'aria-label', `Refresh models of worker ${w.name}`);
  refresh.disabled = w.draining;
}

/** @param {Snapshot} s @param {RenderContext} _ctx */
function renderErrors(s, _ctx) {
  const errors = s.stats.recent_errors ?? [];
  const keys = errorKeys(errors);
  syncRows($('#errors-table tbody'), errors, (_e, i) => keys[i], createErrorRow, updateErrorRow, $('#errors-title'));
  $('#errors-empty').hidden = errors.length > 0;
  const line = codesLine(errorsByCode(s.stats));
  setText($('#errors-by-code'), line ? `Since start: ${line}` : '');
}

/** @param {RecentError} e */
function createErrorRow(e) {
  return h(
    'tr',
    { 'data-correlation-id': e.correlation_id ?? '' },
    h('td', { class: 'time' }),
    h('td', { class: 'num status' }),
    h('td', { class: 'code' }),
    h('td', { class: 'pool' }),
    h('td', { class: 'model' }),
    h('td', { class: 'corr' }),
  );
}

/** @param {HTMLElement} tr @param {RecentError} e */
function updateErrorRow(tr, e) {
  setText(cell(tr, '.time'), fmtTime(e.at));
  setAttr(cell(tr, '.time'), 'title', e.at);
  setText(cell(tr, '.status'), String(e.status));
  setText(cell(tr, '.code'), e.code ?? 'backend error');
  setAttr(cell(tr, '.code'), 'title', e.message ?? (e.code ? null : 'The backend answered with this status'));
  setText(cell(tr, '.pool'), e.pool ?? '–');
  setText(cell(tr, '.model'), e.model ?? '–');
  setText(cell(tr, '.corr'), e.correlation_id ?? '–');
}

/**
 * @typedef {{ kind: 'pool', pool: string, since: string, reason: string } |
 *   { kind: 'worker', provider: string, name: string, since: string, reason: string, worker_ids: string[] }} CordonItem
 */

/** @param {Snapshot} s @param {RenderContext} ctx */
function renderCordons(s, ctx) {
  /** @type {CordonItem[]} */
  const items = [
    ...s.cordons.pools.map((p) => /** @type {CordonItem} */ ({ kind: 'pool', ...p })),
    ...s.cordons.workers.map((w) => /** @type {CordonItem} */ ({ kind: 'worker', ...w })),
  ];
  syncRows(
    $('#cordons-list'),
    items,
    (c) => (c.kind === 'pool' ? `pool|${c.pool}` : `worker|${c.provider}|${c.name}`),
    (c) => createCordonRow(c, ctx.actions),
    (li, c) => updateCordonRow(li, c, ctx.now),
    $('#cordons-title'),
  );
  $('#cordons-empty').hidden = items.length > 0;
}

/** @param {CordonItem} c @param {Actions} actions */
function createCordonRow(c, actions) {
  const undrain = h('button', { type: 'button', class: 'small', 'data-action': 'cordon-undrain' }, 'Undrain');
  const li = h(
    'li',
    { 'data-cordon': c.kind },
    h('div', { class: 'what' }, h('strong', { class: 'title' }), h('span', { class: 'sub muted detail' })),
    undrain,
  );
  undrain.addEventListener('click', () => {
    /** @type {CordonItem} */
    const cur = rowItems.get(li);
    if (cur.kind === 'pool') actions.poolUndrain(cur.pool, undrain);
    else if (cur.worker_ids.length) actions.workerUndrain(cur.worker_ids[0], `worker ${cur.name}`, undrain);
  });
  return li;
}

/** @param {HTMLElement} li @param {CordonItem} c @param {number} now */
function updateCordonRow(li, c, now) {
  rowItems.set(li, c);
  const title = c.kind === 'pool' ? `Pool ${c.pool}` : `Worker ${c.name} · pool ${c.provider}`;
  setText(cell(li, '.title'), title);
  const ids = c.kind === 'worker' ? ` · ids ${c.worker_ids.join(', ')}` : '';
  setText(cell(li, '.detail'), `since ${fmtTime(c.since)} (${fmtAgo(c.since, now)}) · reason: ${c.reason}${ids}`);
  const b = button(li, 'button');
  setAttr(b, 'aria-label', `Undrain ${c.kind === 'pool' ? `pool ${c.pool}` : `worker ${c.name} of pool ${c.provider}`}`);
  b.disabled = c.kind === 'worker' && c.worker_ids.length === 0;
}
