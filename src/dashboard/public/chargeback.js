// @ts-check
/**
 * The chargeback table: GPU time and cost per tenant from `GET /admin/usage?group_by=tenant`
 * (docs/enterprise.md#gpu-time-chargeback). Read on its own slow period, not with every 2-second
 * poll: it is a database query over the usage records.
 */
import { h } from './dom.js';

/** How often the table is read again. */
export const CHARGEBACK_EVERY_MS = 30_000;

/**
 * @typedef {{ tenant: string | null, requests: number, worker_seconds: number, gpu_seconds: number, cost: number | null }} ChargebackRow
 */

/** @param {number} n @param {number} digits */
const fixed = (n, digits) => n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

/**
 * Reads this month's totals per tenant and fills `#chargeback-table`.
 * @param {import('./api.js').AdminApi} api
 */
export async function refreshChargeback(api) {
  const now = new Date();
  const since = `${now.getUTCFullYear()}-${String(now.getUTCMonth() + 1).padStart(2, '0')}-01`;
  /** @type {{ data: ChargebackRow[] }} */
  const usage = await api.request('GET', `admin/usage?group_by=tenant&since=${since}`);
  renderChargeback(usage.data, since);
}

/** @param {ChargebackRow[]} rows @param {string} since */
export function renderChargeback(rows, since) {
  const body = /** @type {HTMLElement} */ (document.querySelector('#chargeback-table tbody'));
  const sorted = [...rows].sort((a, b) => b.gpu_seconds - a.gpu_seconds);
  body.replaceChildren(
    ...sorted.map((r) =>
      h(
        'tr',
        {},
        h('th', { scope: 'row' }, r.tenant ?? '—'),
        h('td', { class: 'num' }, fixed(r.requests, 0)),
        h('td', { class: 'num' }, fixed(r.worker_seconds / 3600, 3)),
        h('td', { class: 'num' }, fixed(r.gpu_seconds / 3600, 3)),
        h('td', { class: 'num' }, r.cost === null ? '—' : fixed(r.cost, 2)),
      ),
    ),
  );
  const empty = /** @type {HTMLElement} */ (document.querySelector('#chargeback-empty'));
  empty.hidden = rows.length > 0;
  const note = /** @type {HTMLElement} */ (document.querySelector('#chargeback-since'));
  note.textContent = `Since ${since} (UTC), per tenant. A slot is a share of its worker: worker time / max_concurrent × gpus_per_worker.`;
}
