/**
 * Hop-by-hop and framing headers that must not be copied between the client connection,
 * the worker envelope and the backend connection (RFC 9110 §7.6.1 plus framing headers
 * that each side recomputes).
 */
const HOP_BY_HOP = new Set(['host', 'content-length', 'connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'te', 'trailer']);

export function isHopByHopHeader(lowercaseName: string): boolean {
  return HOP_BY_HOP.has(lowercaseName) || lowercaseName.startsWith('proxy-');
}

/**
 * The lowercased header names a `Connection` header nominates as hop-by-hop for this connection
 * only (RFC 9110 §7.6.1), e.g. `Connection: close, X-Trace` → {close, x-trace}.
 */
function connectionNominated(headers: Record<string, string | string[] | undefined>): Set<string> | undefined {
  let nominated: Set<string> | undefined;
  for (const name of Object.keys(headers)) {
    if (name.toLowerCase() !== 'connection') continue;
    const value = headers[name];
    if (value === undefined) continue;
    for (const line of Array.isArray(value) ? value : [value]) {
      for (const token of line.split(',')) {
        const t = token.trim().toLowerCase();
        if (t) (nominated ??= new Set()).add(t);
      }
    }
  }
  return nominated;
}

/**
 * Lowercases names and drops hop-by-hop headers, including those the `Connection` header
 * names. Multi-valued headers are joined with ", " (set-cookie is not expected on this path).
 * Returns undefined when nothing is left, because optional wire fields are omitted rather than
 * sent empty.
 */
export function forwardableHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string> | undefined {
  const nominated = connectionNominated(headers);
  let out: Record<string, string> | undefined;
  for (const name of Object.keys(headers)) {
    const value = headers[name];
    if (value === undefined) continue;
    const lower = name.toLowerCase();
    if (isHopByHopHeader(lower) || nominated?.has(lower)) continue;
    (out ??= {})[lower] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}
