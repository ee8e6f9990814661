// @ts-check
/**
 * The audit trail: who did what to which, from `GET /admin/audit` (docs/enterprise.md#audit-trail),
 * newest first, filtered by actor, action, target and time, a page at a time. Read on its own slow
 * period and when the filters change, not with every 2-second poll: it is a database query.
 */
import { h } from './dom.js';

/** How often the table is read again. */
export const AUDIT_EVERY_MS = 30_000;
/** Rows per page. */
export const AUDIT_PAGE = 25;

/**
 * @typedef {{ id: number, at: string, action: string, actor: { kind: string, subject: string, name: string | null } | null,
 *   role: string | null, source_address: string | null, correlation_id: string | null, target_id: string | null,
 *   outcome: string, status: number, error_code: string | null, summary: Record<string, unknown> | null }} AuditRow
 */

/** The older pages' cursors: `before` of the page shown is the last one (none: the newest page). */
const pages = /** @type {number[]} */ ([]);

/** The query string of the filter form, with the page's cursor. */
export function auditQuery() {
  const form = /** @type {HTMLFormElement} */ (document.querySelector('#audit-filters'));
  const params = new URLSearchParams({ limit: String(AUDIT_PAGE) });
  for (const name of ['actor', 'action', 'target', 'since', 'until']) {
    const value = String(new FormData(form).get(name) ?? '').trim();
    if (value) params.set(name, value);
  }
  if (pages.length > 0) params.set('before', String(pages[pages.length - 1]));
  return params.toString();
}

/** Reads the page shown and fills `#audit-table`. @param {import('./api.js').AdminApi} api */
export async function refreshAudit(api) {
  const error = /** @type {HTMLElement} */ (document.querySelector('#audit-error'));
  try {
    /** @type {{ data: AuditRow[], next_before: number | null }} */
    const list = await api.request('GET', `admin/audit?${auditQuery()}`);
    error.textContent = '';
    renderAudit(list.data, list.next_before);
  } catch (e) {
    error.textContent = `Could not read the audit trail: ${e instanceof Error ? e.message : String(e)}`;
    throw e;
  }
}

/** Wires the filter form and the paging buttons. @param {() => void} reread */
export function bindAudit(reread) {
  const form = /** @type {HTMLFormElement} */ (document.querySelector('#audit-filters'));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    pages.length = 0;
    reread();
  });
  /** @type {HTMLButtonElement} */ (document.querySelector('#audit-newer')).addEventListener('click', () => {
    pages.pop();
    reread();
  });
  /** @type {HTMLButtonElement} */ (document.querySelector('#audit-older')).addEventListener('click', (event) => {
    const next = Number(/** @type {HTMLButtonElement} */ (event.currentTarget).dataset.before);
    if (next > 0) pages.push(next);
    reread();
  });
}

/** @param {AuditRow['actor']} actor */
function actorText(actor) {
  if (!actor) return '(not authenticated)';
  return actor.name ? `${actor.name} (${actor.subject})` : actor.subject;
}

/** @param {AuditRow} r */
function outcomeText(r) {
  return r.error_code ? `${r.outcome} ${r.status} ${r.error_code}` : `${r.outcome} ${r.status}`;
}

/** @param {AuditRow[]} rows @param {number | null} nextBefore */
export function renderAudit(rows, nextBefore) {
  const body = /** @type {HTMLElement} */ (document.querySelector('#audit-table tbody'));
  body.replaceChildren(
    ...rows.map((r) =>
      h(
        'tr',
        { 'data-audit-id': String(r.id) },
        h('td', {}, r.at.replace('T', ' ').replace(/\.\d+Z$/, 'Z')),
        h('td', {}, actorText(r.actor)),
        h('td', {}, r.role ?? '—'),
        h('th', { scope: 'row' }, r.action),
        h('td', {}, r.target_id ?? '—'),
        h('td', {}, outcomeText(r)),
        h('td', { class: 'small' }, r.summary ? JSON.stringify(r.summary) : '—'),
        h('td', { class: 'small muted' }, `${r.source_address ?? '—'} ${r.correlation_id ?? ''}`.trim()),
      ),
    ),
  );
  /** @type {HTMLElement} */ (document.querySelector('#audit-empty')).hidden = rows.length > 0;
  const older = /** @type {HTMLButtonElement} */ (document.querySelector('#audit-older'));
  older.disabled = nextBefore === null;
  older.dataset.before = nextBefore === null ? '' : String(nextBefore);
  /** @type {HTMLButtonElement} */ (document.querySelector('#audit-newer')).disabled = pages.length === 0;
}
