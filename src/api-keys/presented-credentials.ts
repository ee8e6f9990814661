import type { IncomingHttpHeaders } from 'node:http';
import { KEY_PREFIX, looksLikeGatewayKey } from './api-key-material';

/** Headers a client may carry its key in (the OpenAI SDK sends the first, the Anthropic SDK the second). */
export type CredentialHeader = 'authorization' | 'x-api-key';

export interface Presented {
  header: CredentialHeader;
  value: string;
}

/**
 * A gateway key inside a longer value (`Bearer sb-…` in x-api-key, `Token sb-…`, `sb-…` without a
 * scheme): `sb-` at the start or after a separator, up to the next separator.
 */
const EMBEDDED_KEY = /(?:^|[\s,;:=("'])(sb-[^\s,;"')]+)/;
/** In any other header, `sb-` followed by this many key characters is taken for a key and dropped. */
const STRAY_KEY = /(?:^|[^A-Za-z0-9_-])sb-[A-Za-z0-9_.~+/=-]{16,}/;

function embeddedKey(value: string): string | undefined {
  if (!value.includes(KEY_PREFIX)) return undefined;
  return EMBEDDED_KEY.exec(value)?.[1];
}

/**
 * `Authorization: Bearer <key>` and `x-api-key: <key>`, as presented (Node trims the values); a
 * gateway key anywhere in either header's value is taken as the presented credential, so that a
 * client who writes `x-api-key: Bearer sb-…` or `Authorization: sb-…` is authenticated by it and
 * the key is taken out of what is forwarded, instead of reaching a worker as a "backend credential".
 */
export function presentedCredentials(headers: IncomingHttpHeaders): Presented[] {
  const out: Presented[] = [];
  const auth = headers.authorization;
  if (typeof auth === 'string') {
    const m = /^Bearer\s+(\S.*)$/i.exec(auth);
    const bearer = m ? m[1].trim() : undefined;
    const value = bearer !== undefined && looksLikeGatewayKey(bearer) ? bearer : (embeddedKey(auth) ?? bearer);
    if (value !== undefined) out.push({ header: 'authorization', value });
  }
  const raw = headers['x-api-key'];
  const xKey = (Array.isArray(raw) ? raw.join(', ') : raw)?.trim();
  if (xKey !== undefined && xKey !== '') {
    out.push({ header: 'x-api-key', value: looksLikeGatewayKey(xKey) ? xKey : (embeddedKey(xKey) ?? xKey) });
  }
  return out;
}

/**
 * Removes from `headers` every other header whose value carries something in the gateway key's
 * format: a key pasted into the wrong header must never be forwarded to a worker. Cheap on the hot
 * path: one `includes` per header value, a regex only when `sb-` occurs.
 */
export function dropStrayKeys(headers: IncomingHttpHeaders): void {
  for (const name of Object.keys(headers)) {
    if (name === 'authorization' || name === 'x-api-key') continue;
    const v = headers[name];
    const text = Array.isArray(v) ? v.join(',') : v;
    if (typeof text === 'string' && text.includes(KEY_PREFIX) && STRAY_KEY.test(text)) delete headers[name];
  }
}
