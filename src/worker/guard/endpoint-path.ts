import { PROBED_ENDPOINTS } from '../models/probes/endpoints';

/**
 * What the daemon relays, and nothing else. The gateway names the backend path of every request
 * (`endpoint_path`), and the daemon attaches BACKEND_API_KEY to what it sends: left unchecked, a
 * compromised gateway (or anyone in the middle of a plain ws:// or --insecure-skip-verify link)
 * could reach the backend's admin routes (`/v1/load_lora_adapter`, `/api/pull`, `/sleep`, …) with
 * the worker's credentials. So a request goes out only to an inference endpoint this worker
 * advertised, under the exact canonical path checked here; anything else never leaves the daemon.
 */

/** Per endpoint: whether it takes a query string. */
export interface EndpointRule {
  /**
   * None of the OpenAI/Anthropic inference POST endpoints reads its query string (everything is in
   * the JSON body), and the gateway never sends one; a query could only smuggle options past it.
   */
  query: boolean;
}

/** The inference endpoints the daemon may relay to (the same set it probes and advertises). */
export const RELAYABLE_ENDPOINTS: ReadonlyMap<string, EndpointRule> = new Map(PROBED_ENDPOINTS.map((p) => [p, { query: false }]));

/** Longer paths are refused before any parsing (the longest allowed one has 20 characters). */
const MAX_PATH_CHARS = 2048;

export type PathCheck = { ok: true; path: string; query?: string } | { ok: false; reason: string };

/** Characters a path or query may hold raw: RFC 3986 unreserved, sub-delims, ':', '@', '/', '%' (checked separately) and '?'. */
const RAW_ALLOWED = /^[A-Za-z0-9\-._~!$&'()*+,;=:@/%?]*$/;

/**
 * Parses `raw` as `/path[?query]` and normalises the path the way a server would before routing:
 * percent-encoded octets are decoded once and `.` segments dropped. Refuses (never "repairs")
 * anything a backend might read differently from this check: an encoded `/`, `\`, `%` (double
 * encoding), `?`, `#` or any non-printable or non-ASCII octet; a `..` segment, raw or decoded; a
 * raw backslash, control character or space; a fragment; a malformed escape; a path that is not
 * absolute or starts with `//` (a network-path reference: another host).
 */
export function normaliseEndpointPath(raw: unknown): PathCheck {
  if (typeof raw !== 'string' || raw.length === 0) return { ok: false, reason: 'endpoint_path is empty' };
  if (raw.length > MAX_PATH_CHARS) return { ok: false, reason: `endpoint_path is longer than ${MAX_PATH_CHARS} characters` };
  if (!RAW_ALLOWED.test(raw)) return { ok: false, reason: 'endpoint_path holds characters a path may not (control, space, backslash, "#", non-ASCII …)' };
  const q = raw.indexOf('?');
  const rawPath = q === -1 ? raw : raw.slice(0, q);
  const query = q === -1 ? undefined : raw.slice(q + 1);
  if (!rawPath.startsWith('/') || rawPath.startsWith('//')) return { ok: false, reason: 'endpoint_path must be an absolute path' };

  let decoded = '';
  for (let i = 0; i < rawPath.length; i++) {
    const ch = rawPath[i];
    if (ch !== '%') {
      decoded += ch;
      continue;
    }
    const hex = rawPath.slice(i + 1, i + 3);
    if (!/^[0-9A-Fa-f]{2}$/.test(hex)) return { ok: false, reason: 'endpoint_path has a malformed percent-escape' };
    const code = parseInt(hex, 16);
    // An encoded separator or escape means one thing to this check and another to a server that
    // decodes (again) before it routes: refuse it rather than guess.
    if (code < 0x21 || code > 0x7e || '/\\%?#'.includes(String.fromCharCode(code))) {
      return { ok: false, reason: `endpoint_path encodes a character that is never part of an endpoint (%${hex.toUpperCase()})` };
    }
    decoded += String.fromCharCode(code);
    i += 2;
  }
  const segments: string[] = [];
  for (const segment of decoded.slice(1).split('/')) {
    if (segment === '..') return { ok: false, reason: 'endpoint_path has a ".." segment' };
    if (segment !== '.') segments.push(segment);
  }
  return { ok: true, path: `/${segments.join('/')}`, query };
}

export type EndpointDecision = { ok: true; path: string } | { ok: false; reason: string };

/**
 * Whether a request to `raw` may go to the backend, given the endpoints this worker advertised
 * (undefined when it advertised no list, which the protocol reads as "all inference endpoints").
 * The path handed back is the allow-list's own string, so what is sent is exactly what was checked.
 */
export function checkEndpoint(raw: unknown, advertised: readonly string[] | undefined): EndpointDecision {
  const parsed = normaliseEndpointPath(raw);
  if (!parsed.ok) return parsed;
  const rule = RELAYABLE_ENDPOINTS.get(parsed.path);
  if (!rule || (advertised !== undefined && !advertised.includes(parsed.path))) {
    return { ok: false, reason: `${parsed.path} is not an inference endpoint this worker advertised` };
  }
  if (parsed.query !== undefined && !rule.query) return { ok: false, reason: `${parsed.path} takes no query string` };
  return { ok: true, path: parsed.path + (parsed.query !== undefined ? `?${parsed.query}` : '') };
}
