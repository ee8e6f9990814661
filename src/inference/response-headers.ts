import { forwardableHeaders } from '../protocol';

/**
 * Which of a worker's response headers reach the client (docs/security.md, "Connections").
 * A worker is untrusted, and the gateway owns the client connection: cookies, CORS, content
 * security and transport policies, rate-limit advice and its own `x-switchboard-*` headers are
 * the gateway's to set, never a backend's.
 *
 * - Standard (non `x-`) headers pass only when listed: the content headers that describe the
 *   body as relayed, `openai-*`, `anthropic-*` and `request-id`. Everything else — `set-cookie`,
 *   `access-control-*`, `content-security-policy`, `strict-transport-security`, `location`,
 *   `refresh`, `link`, `cache-control`, … — is dropped.
 * - Extension (`x-`) headers pass (backend and cache ids such as `x-request-id`, `x-cache-hit`,
 *   `x-backend`), except the security headers, proxy directives and the gateway's own, listed below.
 * - The backend's `x-ratelimit-*` and `retry-after` go out renamed (`x-backend-ratelimit-*`,
 *   `x-backend-retry-after`): the unprefixed names are the gateway's rate-limit answer.
 * - Hop-by-hop and framing headers (and those a `Connection` header names) never pass.
 */
const PASS_STANDARD = new Set(['content-type', 'content-language', 'request-id']);
const PASS_STANDARD_PREFIXES = ['openai-', 'anthropic-'];

/** Extension headers with browser or proxy semantics, or that the gateway sets itself. */
const DROP_X = new Set([
  'x-frame-options',
  'x-xss-protection',
  'x-content-type-options',
  'x-content-security-policy',
  'x-webkit-csp',
  'x-dns-prefetch-control',
  'x-download-options',
  'x-permitted-cross-domain-policies',
  'x-powered-by',
  'x-sendfile',
  'x-real-ip',
  'x-correlation-id',
  'x-queue-wait-ms',
  'x-gpu-time-ms',
  'x-backoff-ms',
]);
const DROP_X_PREFIXES = ['x-switchboard-', 'x-accel-', 'x-forwarded-', 'x-budget-', 'x-lighttpd-'];

const BACKEND_RATELIMIT_PREFIX = 'x-backend-ratelimit-';

/**
 * The client-facing subset of a worker's response headers (names lowercased, values as given).
 * `sendable`, when given, is a further test each outgoing name and value must pass (the sink's
 * check that HTTP can carry them), applied here so the headers are not copied once more for it.
 */
export function clientResponseHeaders(
  headers: Record<string, string> | undefined,
  sendable?: (name: string, value: string) => boolean,
): Record<string, string> {
  const out: Record<string, string> = {};
  let renamed: Record<string, string> | undefined;
  const forwardable = headers === undefined ? undefined : forwardableHeaders(headers);
  if (forwardable === undefined) return out;
  for (const name of Object.keys(forwardable)) {
    const value = forwardable[name];
    if (name.startsWith('x-ratelimit-')) (renamed ??= {})[BACKEND_RATELIMIT_PREFIX + name.slice('x-ratelimit-'.length)] = value;
    else if (name === 'retry-after') (renamed ??= {})['x-backend-retry-after'] = value;
    else if (passes(name, value) && (sendable === undefined || sendable(name, value))) out[name] = value;
  }
  if (renamed === undefined) return out;
  // A renamed header wins over a backend header that already had the new name, also when HTTP
  // cannot carry its value (then neither goes out).
  for (const name of Object.keys(renamed)) {
    if (sendable === undefined || sendable(name, renamed[name])) out[name] = renamed[name];
    else delete out[name];
  }
  return out;
}

function passes(name: string, value: string): boolean {
  if (name.startsWith('x-')) return !DROP_X.has(name) && !DROP_X_PREFIXES.some((p) => name.startsWith(p));
  // The body crossed the worker protocol as decoded text, so only "identity" still describes it.
  if (name === 'content-encoding') return value.trim().toLowerCase() === 'identity';
  return PASS_STANDARD.has(name) || PASS_STANDARD_PREFIXES.some((p) => name.startsWith(p));
}
