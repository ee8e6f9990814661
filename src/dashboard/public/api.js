// @ts-check
/**
 * The documented admin API, as the dashboard reads it (docs/api.md#admin-api). Paths are relative
 * to the page (`<gateway>/dashboard`), so a proxy that adds a path prefix keeps working.
 */

/**
 * @typedef {{ p50: number | null, p90: number | null, p95: number | null, p99: number | null, samples: number }} Latency
 * @typedef {{ bucket_secs: number, start: string, requests: number[], errors: number[], latency_p50_ms: Array<number | null>, latency_p95_ms: Array<number | null> }} History
 * @typedef {{
 *   pool: string, draining: boolean, workers: number, queue_depth: number, in_flight: number,
 *   served: number, cancelled: number, rejected_by_code: Record<string, number>, errors_by_code: Record<string, number>,
 *   queue_wait_ms: { avg: number, p95: number }, tokens: { prompt: number, completion: number, total: number },
 *   requests_per_min: number, error_rate: number, latency_ms?: Latency, history?: History
 * }} PoolStats
 * @typedef {{ at: string, pool: string | null, status: number, code: string | null, message: string | null,
 *   correlation_id: string | null, model: string | null, tenant: string | null, worker_id: string | null }} RecentError
 * @typedef {{
 *   since: string, pools: PoolStats[],
 *   unrouted: { rejected_by_code: Record<string, number>, errors_by_code: Record<string, number> },
 *   overall?: { requests_per_min: number, error_rate: number, latency_ms: Latency, history: History },
 *   recent_errors?: RecentError[]
 * }} Stats
 * @typedef {{
 *   id: string, live: boolean, ready: boolean, draining: boolean, enabled: boolean,
 *   cordon: { since: string, reason: string, deadline_ms: number } | null,
 *   metrics: { queue_depth: number, in_flight: number, slots: { total: number, busy: number, free: number },
 *     workers: number, requests_per_min: number, error_rate: number }
 * }} PoolHealth
 * @typedef {{
 *   id: string, name: string, provider: string, replica: string, models: string[], runner: { type: string, version?: string } | null,
 *   max_concurrent: number, in_flight: number, held_slots: number, load: number, draining: boolean,
 *   cordoned: boolean, cordon: 'pool' | 'worker' | null, latency_ms: number | null, consecutive_failures: number,
 *   ejected: boolean, ejected_until: string | null, connected_at: string, last_seen_at: string,
 *   cache_stats: { kv_cache_usage_ratio?: number, prefix_cache_hit_ratio?: number } | null
 * }} Worker
 * @typedef {{
 *   pools: Array<{ pool: string, since: string, reason: string, deadline_ms: number }>,
 *   workers: Array<{ provider: string, name: string, since: string, reason: string, worker_ids: string[] }>
 * }} Cordons
 * @typedef {{ name: string, enabled: boolean, source?: string, max_queue_len: number, queue_timeout_secs: number,
 *   workers_connected: number, queue_depth: number }} Provider
 * @typedef {{ stats: Stats, pools: PoolHealth[], workers: Worker[], cordons: Cordons, providers: Provider[], caps: import('./caps.js').Cap[] }} Snapshot
 */

/** How long one call may take before the dashboard calls the gateway unreachable. */
const TIMEOUT_MS = 8000;

export class ApiError extends Error {
  /**
   * @param {number} status HTTP status; 0 when the gateway did not answer
   * @param {string} code the error body's `code`
   * @param {string} message
   * @param {string | null} correlationId
   */
  constructor(status, code, message, correlationId = null) {
    super(message);
    this.status = status;
    this.code = code;
    this.correlationId = correlationId;
  }
}

export class AdminApi {
  /**
   * @param {string | { csrf: string }} auth the admin token, sent as a bearer token; or a single
   *   sign-on session: its HttpOnly cookie goes along and mutating calls echo its CSRF token
   */
  constructor(auth) {
    /** @private */
    this.auth = auth;
  }

  /**
   * @param {string} method
   * @param {string} path relative, e.g. `admin/stats`
   * @param {unknown} [body]
   * @returns {Promise<any>}
   */
  async request(method, path, body) {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), TIMEOUT_MS);
    /** @type {Response} */
    let res;
    let text;
    try {
      const session = typeof this.auth === 'string' ? null : this.auth;
      res = await fetch(path, {
        method,
        headers: {
          ...(session ? (method === 'GET' ? {} : { 'x-csrf-token': session.csrf }) : { authorization: `Bearer ${this.auth}` }),
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: controller.signal,
        cache: 'no-store',
        credentials: session ? 'same-origin' : 'omit',
        redirect: 'error',
      });
      text = await res.text();
    } catch (e) {
      const timedOut = e instanceof DOMException && e.name === 'AbortError';
      throw new ApiError(
        0,
        timedOut ? 'timeout' : 'network_error',
        timedOut ? `The gateway did not answer within ${TIMEOUT_MS / 1000} s` : 'The gateway could not be reached',
      );
    } finally {
      clearTimeout(timer);
    }
    /** @type {any} */
    let json;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    if (!res.ok) {
      const err = json && typeof json === 'object' ? json.error : undefined;
      throw new ApiError(
        res.status,
        typeof err?.code === 'string' ? err.code : `http_${res.status}`,
        typeof err?.message === 'string' ? err.message : `HTTP ${res.status}`,
        res.headers.get('x-correlation-id'),
      );
    }
    return json;
  }

  /** @returns {Promise<Snapshot>} everything the page shows, read in parallel */
  async snapshot() {
    // Usage totals of an empty window (nothing is summed): only the live `concurrency` is read.
    const [stats, pools, workers, cordons, providers, usage] = await Promise.all([
      this.request('GET', 'admin/stats'),
      this.request('GET', 'v1/pools'),
      this.request('GET', 'admin/workers'),
      this.request('GET', 'admin/cordons'),
      this.request('GET', 'admin/providers'),
      this.request('GET', 'admin/usage?since=9999-01-01'),
    ]);
    return { stats, pools: pools.data, workers: workers.data, cordons, providers: providers.data, caps: usage.concurrency ?? [] };
  }

  /** @param {string} id @param {{ timeout_secs?: number, reason?: string }} body */
  drainWorker(id, body) {
    return this.request('POST', `admin/workers/${encodeURIComponent(id)}/drain`, body);
  }

  /** @param {string} id */
  undrainWorker(id) {
    return this.request('POST', `admin/workers/${encodeURIComponent(id)}/undrain`, {});
  }

  /** @param {string} id */
  refreshModels(id) {
    return this.request('POST', `admin/workers/${encodeURIComponent(id)}/refresh-models`, {});
  }

  /** @param {string} id @param {{ deadline_ms?: number, reason?: string }} body */
  drainPool(id, body) {
    return this.request('POST', `v1/pools/${encodeURIComponent(id)}/drain`, body);
  }

  /** @param {string} id */
  undrainPool(id) {
    return this.request('POST', `v1/pools/${encodeURIComponent(id)}/undrain`, {});
  }
}

// ---------------------------------------------------------------- single sign-on

/**
 * Single sign-on for the dashboard (docs/enterprise.md#single-sign-on): whether the gateway offers
 * it, who is signed in, and logout. The session is an HttpOnly cookie this script never sees; it
 * reads only the CSRF token its mutating calls must echo.
 */

/** @typedef {{ sso: boolean, signed_in?: boolean, subject?: string, name?: string | null, role?: string, csrf_token?: string }} SsoSession */

/** @returns {Promise<SsoSession>} `{sso: false}` when the gateway has no SSO or cannot say */
export async function ssoSession() {
  try {
    const res = await fetch('auth/session', { credentials: 'same-origin', cache: 'no-store', headers: { accept: 'application/json' } });
    return res.ok ? await res.json() : { sso: false };
  } catch {
    return { sso: false };
  }
}

/** Ends the session at the gateway (server-side), so the cookie is worthless even if kept. @param {string} csrf */
export async function ssoLogout(csrf) {
  try {
    await fetch('auth/logout', { method: 'POST', credentials: 'same-origin', headers: { 'x-csrf-token': csrf } });
  } catch {
    // Signed out locally either way; the session expires on its own.
  }
}
