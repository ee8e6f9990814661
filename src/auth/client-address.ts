import { isIP } from 'node:net';

type Headers = Record<string, string | string[] | undefined>;

/**
 * The one answer to "which client is this?" for everything keyed by client address (failed-auth
 * limiters, the admin token's limiter, the audit of unauthenticated refusals): the socket peer, or —
 * only when the peer is a trusted proxy — the nearest untrusted hop of the forwarding chain.
 * `Forwarded` (RFC 7239) wins over `X-Forwarded-For` when both are present: a proxy that writes the
 * standard header is the one the operator configured, while `X-Forwarded-For` may be a value the
 * client sent and the proxy merely passed on.
 */
export function resolveClientAddress(peerAddress: string | undefined, headers: Headers, trusted: ReadonlySet<string>): string {
  const peer = normalizeAddress(peerAddress ?? 'unknown');
  if (!trusted.has(peer)) return peer;
  const chain = forwardedChain(headers);
  for (let i = chain.length - 1; i >= 0; i--) {
    const hop = normalizeAddress(chain[i]);
    if (!trusted.has(hop)) return hop;
  }
  return peer;
}

/** The set `resolveClientAddress` expects, from `TRUSTED_PROXIES`. */
export function trustedProxySet(addresses: readonly string[]): ReadonlySet<string> {
  return new Set(addresses.map(normalizeAddress));
}

export function normalizeAddress(address: string): string {
  let a = address.trim().replace(/^"|"$/g, '');
  if (a.startsWith('['))
    a = a.slice(1, a.indexOf(']') > 0 ? a.indexOf(']') : undefined); // [v6]:port
  else if (isIP(a) === 0 && /^[\d.]+:\d+$/.test(a)) a = a.slice(0, a.lastIndexOf(':')); // v4:port
  if (a.startsWith('::ffff:') && isIP(a.slice(7)) === 4) a = a.slice(7);
  return a.toLowerCase();
}

function headerValue(v: string | string[] | undefined): string {
  return Array.isArray(v) ? v.join(',') : (v ?? '');
}

/** Addresses from Forwarded `for=` parameters, else from X-Forwarded-For, in order. */
function forwardedChain(headers: Headers): string[] {
  const fwd = headerValue(headers['forwarded']);
  const out: string[] = [];
  for (const element of fwd.split(',')) {
    const m = /(?:^|;)\s*for=("[^"]*"|[^;,\s]*)/i.exec(element);
    if (m && m[1]) out.push(m[1]);
  }
  if (out.length > 0) return out;
  const xff = headerValue(headers['x-forwarded-for']);
  return xff
    ? xff
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
    : [];
}
