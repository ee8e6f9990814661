// @ts-check
/**
 * Switchboard operator dashboard: sign-in with the admin token (kept in sessionStorage only),
 * polling of the documented admin API every 2 s, and the operator actions (drain/undrain a worker
 * or a pool, refresh a worker's models) with confirmation and visible feedback.
 */
import { AdminApi, ApiError, ssoLogout, ssoSession } from './api.js';
import { h } from './dom.js';
import { finishedTotal, ratePerSecond } from './model.js';
import { confirmDrain } from './confirm-dialog.js';
import { CHARGEBACK_EVERY_MS, refreshChargeback } from './chargeback.js';
import { AUDIT_EVERY_MS, bindAudit, refreshAudit } from './audit.js';
import { clearAll, render } from './views.js';
import { renderCaps, setupCapsForm } from './caps.js';

/** The page updates at least this often. */
const POLL_MS = 2000;
/** "Requests/s" is the change of the finished-requests counter over the last few updates (about 10 s). */
const RATE_READINGS = 6;
/** Queue depth samples kept for its chart: five minutes at one per update. */
const QUEUE_SAMPLES = 150;
const TOAST_MS = 12_000;
const MAX_TOASTS = 4;
/** sessionStorage only: gone with the tab, never sent by the browser on its own (unlike a cookie). */
const TOKEN_KEY = 'switchboard.adminToken';

/** @param {string} id */
function byId(id) {
  const el = document.getElementById(id);
  if (!el) throw new Error(`missing #${id}`);
  return el;
}

const ui = {
  loginView: byId('login-view'),
  loginForm: /** @type {HTMLFormElement} */ (byId('login-form')),
  token: /** @type {HTMLInputElement} */ (byId('token')),
  loginError: byId('login-error'),
  loginSubmit: /** @type {HTMLButtonElement} */ (byId('login-submit')),
  dashboard: byId('dashboard-view'),
  sessionBar: byId('session-bar'),
  nav: byId('section-nav'),
  conn: byId('conn-state'),
  lastUpdate: byId('last-update'),
  logout: /** @type {HTMLButtonElement} */ (byId('logout')),
  toasts: byId('toasts'),
  overviewTitle: byId('overview-title'),
  ssoSignin: byId('sso-signin'),
  signedInAs: byId('signed-in-as'),
};
/** The SSO session's CSRF token while signed in with single sign-on (null: the admin token, or signed out). */
let ssoCsrf = /** @type {string | null} */ (null);

/** @typedef {{ count: number, at: number, since: string }} Reading */
/** @type {{ api: AdminApi | null, generation: number, timer: number | undefined, readings: Reading[], queueSamples: number[], connState: string }} */
const state = { api: null, generation: 0, timer: undefined, readings: [], queueSamples: [], connState: '' };

// ---------------------------------------------------------------- session

function storedToken() {
  try {
    return sessionStorage.getItem(TOKEN_KEY);
  } catch {
    return null;
  }
}

/** @param {string | null} token */
function storeToken(token) {
  try {
    if (token === null) sessionStorage.removeItem(TOKEN_KEY);
    else sessionStorage.setItem(TOKEN_KEY, token);
  } catch {
    // Storage refused (private mode policies): the session then lasts as long as the page.
  }
}

/**
 * Back to the sign-in form, forgetting the token and every figure of the session.
 * @param {string} message shown (and announced) above the form; '' for none
 * @param {boolean} [focus] put the keyboard on the token field (not on first load: the page starts at its top)
 */
function showLogin(message, focus = true) {
  stopPolling();
  state.api = null;
  storeToken(null);
  clearAll();
  renderCaps([]);
  ui.dashboard.hidden = true;
  ui.sessionBar.hidden = true;
  ui.nav.hidden = true;
  ui.loginView.hidden = false;
  ui.loginError.textContent = message;
  ui.token.value = '';
  ui.token.setAttribute('aria-invalid', message ? 'true' : 'false');
  if (focus) ui.token.focus();
}

function showDashboard() {
  ui.loginView.hidden = true;
  ui.loginError.textContent = '';
  ui.dashboard.hidden = false;
  ui.sessionBar.hidden = false;
  ui.nav.hidden = false;
}

/** @param {ApiError} e */
function refusedMessage(e) {
  if (e.status === 401) return 'The gateway refused this admin token (401). Check the token and try again.';
  if (e.status === 403) return 'The admin API is disabled on this gateway: no ADMIN_TOKEN is configured (403).';
  if (e.status === 0) return `${e.message}. Check that the gateway is running, then try again.`;
  return `The gateway answered ${e.status} ${e.code}: ${e.message}`;
}

ui.loginForm.addEventListener('submit', async (event) => {
  event.preventDefault();
  const token = ui.token.value.trim();
  if (!token) {
    ui.loginError.textContent = 'Enter the admin token.';
    ui.token.setAttribute('aria-invalid', 'true');
    ui.token.focus();
    return;
  }
  ui.loginSubmit.setAttribute('aria-busy', 'true');
  ui.loginSubmit.textContent = 'Signing in…';
  const api = new AdminApi(token);
  try {
    const snapshot = await api.snapshot();
    storeToken(token);
    state.api = api;
    showDashboard();
    update(snapshot);
    ui.overviewTitle.focus();
    startPolling();
  } catch (e) {
    const err = e instanceof ApiError ? e : new ApiError(0, 'error', String(e));
    ui.loginError.textContent = refusedMessage(err);
    ui.token.setAttribute('aria-invalid', 'true');
    ui.token.select();
    ui.token.focus();
  } finally {
    ui.loginSubmit.removeAttribute('aria-busy');
    ui.loginSubmit.textContent = 'Sign in';
  }
});

ui.token.addEventListener('input', () => ui.token.setAttribute('aria-invalid', 'false'));

ui.logout.addEventListener('click', () => {
  if (ssoCsrf) ssoLogout(ssoCsrf);
  ssoCsrf = null;
  ui.signedInAs.textContent = '';
  showLogin('');
  toast('Signed out: the admin token was removed from this tab.', 'ok');
});

// ---------------------------------------------------------------- polling

function startPolling() {
  stopPolling();
  const generation = ++state.generation;
  const loop = async () => {
    const started = performance.now();
    await poll(generation);
    if (generation !== state.generation) return;
    state.timer = window.setTimeout(loop, Math.max(0, POLL_MS - (performance.now() - started)));
  };
  state.timer = window.setTimeout(loop, POLL_MS);
}

function stopPolling() {
  state.generation++;
  if (state.timer !== undefined) window.clearTimeout(state.timer);
  state.timer = undefined;
  state.readings = [];
  state.queueSamples = [];
  auditReadAt = -Infinity; // read at once at the next sign-in
  setConn('', '');
}

/** When the chargeback table was last read (performance.now(); -Infinity: at the next poll). */
let chargebackReadAt = -Infinity;
/** When the audit trail was last read (-Infinity: at the next poll). */
let auditReadAt = -Infinity;
bindAudit(() => {
  if (state.api) refreshAudit(state.api).catch(() => undefined);
});

/** One round of reads; an update at once after an action. @param {number} generation */
async function poll(generation) {
  const api = state.api;
  if (!api) return;
  try {
    const snapshot = await api.snapshot();
    if (generation !== state.generation) return;
    update(snapshot);
    // Its own slow period (a database query); a failure leaves the last table and is retried then.
    if (performance.now() - chargebackReadAt >= CHARGEBACK_EVERY_MS) {
      chargebackReadAt = performance.now();
      refreshChargeback(api).catch(() => (chargebackReadAt = -Infinity));
    }
    if (performance.now() - auditReadAt >= AUDIT_EVERY_MS) {
      auditReadAt = performance.now();
      refreshAudit(api).catch(() => (auditReadAt = -Infinity));
    }
  } catch (e) {
    if (generation !== state.generation) return;
    const err = e instanceof ApiError ? e : new ApiError(0, 'error', String(e));
    if (err.status === 401 || err.status === 403) {
      showLogin(err.status === 401 ? 'The gateway no longer accepts your admin token (401): it may have changed. Sign in again.' : refusedMessage(err));
      return;
    }
    setConn('stale', `Connection problem: ${err.status ? `${err.status} ${err.code}` : err.message}. Retrying…`);
    ui.dashboard.classList.add('stale-data');
  }
}

/** Reads at once (after an action), without waiting for the next tick. */
function pollNow() {
  return poll(state.generation);
}

/** @param {import('./api.js').Snapshot} snapshot */
function update(snapshot) {
  const reading = { count: finishedTotal(snapshot.stats), at: performance.now(), since: snapshot.stats.since };
  // A restarted gateway counts from zero again: older readings no longer compare.
  if (state.readings.length && state.readings[state.readings.length - 1].since !== reading.since) state.readings = [];
  state.readings.push(reading);
  if (state.readings.length > RATE_READINGS) state.readings.shift();
  const rps = state.readings.length > 1 ? ratePerSecond(state.readings[0], reading) : null;
  let queued = 0;
  for (const p of snapshot.stats.pools) queued += p.queue_depth;
  state.queueSamples.push(queued);
  if (state.queueSamples.length > QUEUE_SAMPLES) state.queueSamples.splice(0, state.queueSamples.length - QUEUE_SAMPLES);
  render(snapshot, { now: Date.now(), rps, queueSamples: state.queueSamples, actions });
  renderCaps(snapshot.caps);
  ui.dashboard.classList.remove('stale-data');
  setConn('live', 'Live');
  ui.lastUpdate.textContent = `Updated ${new Date().toLocaleTimeString('en-GB', { hour12: false })}`;
}

/**
 * The connection state in the top bar; only a change is announced (not every update).
 * @param {'' | 'live' | 'stale'} kind
 * @param {string} text
 */
function setConn(kind, text) {
  if (state.connState === `${kind}:${text}`) return;
  state.connState = `${kind}:${text}`;
  ui.conn.className = `conn ${kind}`;
  ui.conn.textContent = text;
}

// ---------------------------------------------------------------- feedback

/**
 * Shows the result of an action (announced by the live region it is added to).
 * @param {string} message
 * @param {'ok' | 'bad' | 'info'} tone
 */
function toast(message, tone) {
  const dismiss = h('button', { type: 'button', class: 'secondary small', 'aria-label': 'Dismiss message' }, '×');
  const el = h('div', { class: `toast ${tone}`, 'data-tone': tone }, h('p', {}, tone === 'bad' ? `Failed: ${message}` : message), dismiss);
  const remove = () => {
    if (el.contains(document.activeElement)) ui.overviewTitle.focus();
    el.remove();
  };
  dismiss.addEventListener('click', remove);
  ui.toasts.append(el);
  while (ui.toasts.children.length > MAX_TOASTS) ui.toasts.firstElementChild?.remove();
  window.setTimeout(() => {
    // Not while the keyboard is on it.
    if (!el.contains(document.activeElement)) el.remove();
  }, TOAST_MS);
}

/** @param {unknown} e */
function describeError(e) {
  if (!(e instanceof ApiError)) return String(e);
  if (e.status === 0) return e.message;
  return `${e.status} ${e.code}: ${e.message}`;
}

// ---------------------------------------------------------------- actions

/**
 * Runs an action once at a time per button, reports its result and reads the new state at once.
 * @param {HTMLButtonElement} button
 * @param {() => Promise<string>} run resolves with the success message
 */
async function act(button, run) {
  if (button.getAttribute('aria-busy') === 'true') return;
  button.setAttribute('aria-busy', 'true');
  try {
    toast(await run(), 'ok');
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) {
      showLogin('The gateway no longer accepts your admin token (401): it may have changed. Sign in again.');
      return;
    }
    toast(describeError(e), 'bad');
  } finally {
    button.removeAttribute('aria-busy');
  }
  await pollNow();
}

/** @type {import('./views.js').Actions} */
const actions = {
  async workerDrain(w, button) {
    const closes =
      w.in_flight === 0
        ? 'closes at once (nothing in flight)'
        : `closes once its ${w.in_flight === 1 ? '1 request in flight finishes' : `${w.in_flight} requests in flight finish`}`;
    const choice = await confirmDrain({
      title: `Drain worker ${w.name}?`,
      text: `Worker ${w.name} (${w.id}, pool ${w.provider}) takes no new work and ${closes}. Its name stays cordoned — a reconnecting daemon is refused — until you undrain it.`,
      ok: 'Drain worker',
    });
    if (!choice) return;
    await act(button, async () => {
      const api = requireApi();
      await api.drainWorker(w.id, { timeout_secs: choice.deadlineSecs, reason: choice.reason });
      return `Worker ${w.name} is draining (graceful shutdown sent); its name is cordoned until undrain.`;
    });
  },
  async workerUndrain(id, label, button) {
    await act(button, async () => {
      const res = await requireApi().undrainWorker(id);
      if (!res?.undrained) return `The ${label} was not cordoned: nothing to undrain.`;
      return res.connected
        ? `Undrained ${label}: its name may connect again (the current connection still finishes its drain).`
        : `Undrained ${label}: its daemon may reconnect (within about a minute).`;
    });
  },
  async refreshModels(w, button) {
    await act(button, async () => {
      await requireApi().refreshModels(w.id);
      return `Asked worker ${w.name} to refresh its models; the list updates when it answers.`;
    });
  },
  async poolDrain(pool, button) {
    const choice = await confirmDrain({
      title: `Drain pool ${pool}?`,
      text: `Every worker of pool ${pool} drains, its queued requests are routed again, new requests for its models go to other pools or get 503 pool_unavailable, and its workers are refused until you undrain it.`,
      ok: 'Drain pool',
    });
    if (!choice) return;
    await act(button, async () => {
      const body = { deadline_ms: choice.deadlineSecs === undefined ? undefined : choice.deadlineSecs * 1000, reason: choice.reason };
      const res = await requireApi().drainPool(pool, body);
      const n = res?.metrics?.workers ?? 0;
      return `Pool ${pool} is drained: ${n} worker${n === 1 ? '' : 's'} draining, new workers refused until undrain.`;
    });
  },
  async poolUndrain(pool, button) {
    await act(button, async () => {
      await requireApi().undrainPool(pool);
      return `Undrained pool ${pool}: its workers may register again.`;
    });
  },
};

function requireApi() {
  if (!state.api) throw new ApiError(401, 'unauthorized', 'Signed out');
  return state.api;
}

// ---------------------------------------------------------------- start

const saved = storedToken();
if (saved) {
  state.api = new AdminApi(saved);
  showDashboard();
  setConn('stale', 'Connecting…');
  pollNow().then(() => {
    if (state.api) startPolling();
  });
} else {
  showLogin('', false);
}
// With single sign-on the sign-in view offers it, and a live SSO session opens the dashboard at once.
ssoSession().then((s) => {
  ui.ssoSignin.hidden = !s.sso;
  if (!s.signed_in || !s.csrf_token || state.api) return;
  ssoCsrf = s.csrf_token;
  ui.signedInAs.textContent = `${s.name ?? s.subject} (${s.role})`;
  state.api = new AdminApi({ csrf: s.csrf_token });
  showDashboard();
  setConn('stale', 'Connecting…');
  pollNow().then(() => {
    if (state.api) startPolling();
  });
});

setupCapsForm(() => state.api, act);
