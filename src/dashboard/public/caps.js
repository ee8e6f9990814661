// @ts-check
/**
 * Concurrency caps: every key's and tenant's `max_concurrent` with what runs and waits under it
 * now (from `GET /admin/usage`), and a form that sets or clears one (`PATCH /admin/keys/:id`,
 * `PUT /admin/tenants/:id` with the tenant's other settings kept).
 */
import { h } from './dom.js';

/** @typedef {{ scope: 'key' | 'tenant', id: string, tenant: string, limit: number, in_flight: number, waiting: number }} Cap */

/** @param {string} id */
function byId(id) {
  const el = document.getElementById(id);
  if (!el) throw new Error(`missing #${id}`);
  return el;
}

/** Fills the caps table (rebuilt: a handful of rows). @param {Cap[]} caps */
export function renderCaps(caps) {
  const body = byId('caps-table').querySelector('tbody');
  if (!body) return;
  body.replaceChildren(
    ...caps.map((c) =>
      h(
        'tr',
        { 'data-cap': `${c.scope}:${c.id}` },
        h('td', {}, c.scope),
        h('td', {}, c.id),
        h('td', {}, c.tenant),
        h('td', { class: 'num limit' }, String(c.limit)),
        h('td', { class: 'num in-flight' }, String(c.in_flight)),
        h('td', { class: 'num waiting' }, String(c.waiting)),
      ),
    ),
  );
  byId('caps-empty').hidden = caps.length > 0;
}

/**
 * The tenant's stored or configured settings with `max_concurrent` replaced (a PUT replaces them all).
 * @param {import('./api.js').AdminApi} api @param {string} id @param {number | null} limit
 */
async function tenantSettings(api, id, limit) {
  const current = await api.request('GET', `admin/tenants/${encodeURIComponent(id)}`);
  /** @type {Record<string, unknown>} */
  const body = {};
  // The defaults of a tenant without settings of its own are not copied into it.
  if (current.source !== 'default') for (const [k, v] of Object.entries(current.settings)) if (v !== null) body[k] = v;
  if (limit === null) delete body.max_concurrent;
  else body.max_concurrent = limit;
  return body;
}

/**
 * Wires the form. @param {() => import('./api.js').AdminApi | null} api
 * @param {(button: HTMLButtonElement, run: () => Promise<string>) => Promise<void>} act
 */
export function setupCapsForm(api, act) {
  const form = /** @type {HTMLFormElement} */ (byId('caps-form'));
  const scope = /** @type {HTMLSelectElement} */ (byId('caps-scope'));
  const id = /** @type {HTMLInputElement} */ (byId('caps-id'));
  const limit = /** @type {HTMLInputElement} */ (byId('caps-limit'));
  const submit = /** @type {HTMLButtonElement} */ (byId('caps-submit'));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const a = api();
    const target = id.value.trim();
    if (!a || !target) {
      id.setAttribute('aria-invalid', 'true');
      id.focus();
      return;
    }
    id.setAttribute('aria-invalid', 'false');
    const value = limit.value.trim() === '' ? null : Number(limit.value);
    void act(submit, async () => {
      const what = `${scope.value} ${target}`;
      if (scope.value === 'key') await a.request('PATCH', `admin/keys/${encodeURIComponent(target)}`, { max_concurrent: value });
      else await a.request('PUT', `admin/tenants/${encodeURIComponent(target)}`, await tenantSettings(a, target, value));
      return value === null ? `Cleared max_concurrent of ${what}.` : `Set max_concurrent of ${what} to ${value}.`;
    });
  });
}
