/**
 * Hop-by-hop and framing headers that must not be copied between the client connection,
 * the worker envelope and the backend connection (RFC 9110 §7.6.1 plus framing headers
 * that each side recomputes).
 */
const HOP_BY_HOP = new Set(['host', 'content-length', 'connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'te', 'trailer']);

export function isHopByHopHeader(lowercaseName: string): boolean {
  return HOP_BY_HOP.has(lowercaseName) || lowercaseName.startsWith('proxy-');
}

/** Adds the lowercased names a `Connection` header value nominates (`close, X-Trace` → close, x-trace). */
function addNominated(value: string | string[], into: Set<string>): void {
  for (const line of Array.isArray(value) ? value : [value]) {
    for (const token of line.split(',')) {
      const t = token.trim().toLowerCase();
      if (t) into.add(t);
    }
  }
}

/**
 * Lowercases names and drops hop-by-hop headers, including those the `Connection` header
 * names (RFC 9110 §7.6.1). Multi-valued headers are joined with ", " (set-cookie is not expected
 * on this path). Returns undefined when nothing is left, because optional wire fields are omitted
 * rather than sent empty.
 */
export function forwardableHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string> | undefined {
  // One pass over the names (this runs for every request and every response); the names a
  // `Connection` header nominates are taken out afterwards, wherever it stood among the others.
  let nominated: Set<string> | undefined;
  let out: Record<string, string> | undefined;
  for (const name of Object.keys(headers)) {
    const value = headers[name];
    if (value === undefined) continue;
    const lower = name.toLowerCase();
    // `Connection: keep-alive` (nearly every HTTP/1.1 client) nominates only a hop-by-hop header
    // that is dropped anyway: no set, no split, for it.
    if (lower === 'connection' && value !== 'keep-alive') addNominated(value, (nominated ??= new Set()));
    if (isHopByHopHeader(lower)) continue;
    (out ??= {})[lower] = Array.isArray(value) ? value.join(', ') : value;
  }
  if (nominated && out) {
    for (const name of nominated) delete out[name];
    if (Object.keys(out).length === 0) return undefined;
  }
  return out;
}
