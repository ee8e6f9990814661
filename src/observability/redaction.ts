/** What the gateway's logs must never print, and the functions that remove it. */

export const REDACTED = '[redacted]';

/**
 * Field names whose values are secrets wherever they appear, compared after lower-casing and
 * dropping '-' and '_' (so `secretHash`, `secret_hash` and `Secret-Hash` all match).
 */
const SECRET_FIELDS = new Set(
  [
    'authorization',
    'proxy-authorization',
    'cookie',
    'set-cookie',
    'x-api-key',
    'api_key',
    'x-worker-secret',
    'worker_secret',
    'secret',
    'secret_hash',
    'client_secret',
    'key_hash',
    'key_sha256',
    'admin_token',
    'x-admin-token',
    'token',
    'access_token',
    'refresh_token',
    'password',
  ].map(normalizeField),
);

function normalizeField(name: string): string {
  return name.toLowerCase().replace(/[-_]/g, '');
}

export function isSecretField(name: string): boolean {
  return SECRET_FIELDS.has(normalizeField(name));
}

/**
 * pino `redact` paths for the usual places (top level, one level down, request/response headers).
 * scrubSecretFields catches deeper nesting; these keep pino's own guarantee in place.
 */
export const REDACT_PATHS: string[] = (() => {
  const headerNames = ['authorization', 'proxy-authorization', 'cookie', 'x-api-key', 'x-worker-secret', 'x-admin-token'];
  const fieldNames = ['authorization', 'worker_secret', 'secret', 'secret_hash', 'secretHash', 'admin_token', 'adminToken', 'api_key', 'password'];
  const paths: string[] = [];
  for (const f of fieldNames) paths.push(f, `*.${f}`);
  for (const h of headerNames) {
    const key = /^[A-Za-z_$][\w$]*$/.test(h) ? `.${h}` : `["${h}"]`;
    paths.push(`headers${key}`, `*.headers${key}`, `req.headers${key}`, `request.headers${key}`);
  }
  return paths;
})();

const MAX_DEPTH = 8;

/**
 * Returns `value` with every secret field replaced by REDACTED, at any depth. Objects without
 * secrets are returned as they are (no copy); errors and class instances are left to pino's
 * serializers.
 */
export function scrubSecretFields<T>(value: T): T {
  return scrub(value, 0, new WeakSet()) as T;
}

function scrub(value: unknown, depth: number, seen: WeakSet<object>): unknown {
  if (value === null || typeof value !== 'object' || depth > MAX_DEPTH || seen.has(value)) return value;
  seen.add(value);
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    value.forEach((item, i) => {
      const clean = scrub(item, depth + 1, seen);
      if (clean !== item) (copy ??= value.slice())[i] = clean;
    });
    return copy ?? value;
  }
  if (!isPlainObject(value)) return value;
  let copy: Record<string, unknown> | undefined;
  for (const [key, item] of Object.entries(value)) {
    const clean = isSecretField(key) && item !== undefined && item !== null ? REDACTED : scrub(item, depth + 1, seen);
    if (clean !== item) (copy ??= { ...value })[key] = clean;
  }
  return copy ?? value;
}

function isPlainObject(value: object): value is Record<string, unknown> {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** `worker_secret=…` style pairs in URLs, query strings and free text. */
const SECRET_PAIR = /\b((?:worker[_-]?secret|secret(?:[_-]?hash)?|api[_-]?key|admin[_-]?token|access[_-]?token|token|password)=)[^&\s"'\\]*/gi;
/** A bearer credential that ended up inside a message. */
const BEARER = /\b(Bearer)\s+[A-Za-z0-9\-._~+/]+=*/g;
/** A client API key issued by the gateway (`sb-` + 43 base64url characters), wherever it appears. */
const GATEWAY_KEY = /\b(sb-)[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])/g;

/** Replaces secret values inside free text (messages, URLs, a whole serialized log line). */
export function scrubSecretText(text: string): string {
  if (!text.includes('=') && !text.includes('Bearer') && !text.includes('sb-')) return text;
  return text.replace(SECRET_PAIR, `$1${REDACTED}`).replace(BEARER, `$1 ${REDACTED}`).replace(GATEWAY_KEY, `$1${REDACTED}`);
}
