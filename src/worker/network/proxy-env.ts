import { isIP } from 'node:net';

/**
 * Which proxy a connection goes through, decided like curl does from HTTPS_PROXY / HTTP_PROXY /
 * NO_PROXY. Two differences, both deliberate: uppercase HTTP_PROXY is honoured too (curl only
 * reads http_proxy; the daemon is not a CGI program, which is why curl refuses it), and a
 * NO_PROXY entry with a port (host:8443) matches only that port (curl never matches such an entry).
 */
export interface ProxySettings {
  /** For http:// and ws:// targets. */
  httpProxy?: string;
  /** For https:// and wss:// targets. */
  httpsProxy?: string;
  /** Comma-separated hosts, domains, IPs or CIDR blocks that are reached directly; `*` = all. */
  noProxy?: string;
}

type Env = Record<string, string | undefined>;

function firstSet(env: Env, names: string[]): { name: string; value: string } | undefined {
  for (const name of names) {
    const value = env[name]?.trim();
    if (value) return { name, value };
  }
  return undefined;
}

/** A proxy URL as curl accepts it: `host:port` means http://host:port. Throws a readable message. */
export function parseProxyUrl(value: string, source: string): URL {
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? value : `http://${value}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw new Error(`${source} must be a proxy URL such as http://proxy.example.com:3128`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new Error(`${source} uses ${url.protocol.replace(':', '')}://, but only http:// and https:// proxies are supported`);
  }
  if (!url.hostname) throw new Error(`${source} must name a proxy host`);
  try {
    decodeURIComponent(url.username);
    decodeURIComponent(url.password);
  } catch {
    throw new Error(`${source} has credentials with a malformed %-escape`);
  }
  return url;
}

/** The Proxy-Authorization header for a proxy URL with credentials, or nothing. */
export function proxyAuthorization(proxy: URL): Record<string, string> {
  if (!proxy.username && !proxy.password) return {};
  const credentials = `${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`;
  return { 'proxy-authorization': `Basic ${Buffer.from(credentials).toString('base64')}` };
}

/** Reads the proxy variables (lowercase first, as curl does). Problems are returned, not thrown. */
export function proxySettingsFromEnv(env: Env): { settings: ProxySettings; problems: string[] } {
  const problems: string[] = [];
  const settings: ProxySettings = {};
  const take = (names: string[], key: 'httpProxy' | 'httpsProxy') => {
    const found = firstSet(env, names);
    if (!found) return;
    try {
      settings[key] = parseProxyUrl(found.value, found.name).href;
    } catch (e) {
      problems.push((e as Error).message);
    }
  };
  take(['https_proxy', 'HTTPS_PROXY'], 'httpsProxy');
  take(['http_proxy', 'HTTP_PROXY'], 'httpProxy');
  const noProxy = firstSet(env, ['no_proxy', 'NO_PROXY']);
  if (noProxy) settings.noProxy = noProxy.value;
  return { settings, problems };
}

/** The proxy for `target` (http(s):// or ws(s)://), or undefined to connect directly. */
export function proxyFor(target: URL, settings: ProxySettings): URL | undefined {
  const secure = target.protocol === 'https:' || target.protocol === 'wss:';
  const proxy = secure ? settings.httpsProxy : settings.httpProxy;
  if (!proxy) return undefined;
  const port = Number(target.port || (secure ? 443 : 80));
  if (settings.noProxy && bypassesProxy(target.hostname, port, settings.noProxy)) return undefined;
  return new URL(proxy);
}

/** The proxy URL without its credentials, for logs. */
export function describeProxy(proxy: URL): string {
  return `${proxy.protocol}//${proxy.host}`;
}

/**
 * curl's NO_PROXY matching: `*` matches everything; a name matches itself and every host under
 * it (a leading dot is ignored, so `.corp.example` also matches `corp.example`); IP addresses
 * match exactly or by CIDR block; IPv6 is written without brackets. Case-insensitive.
 */
export function bypassesProxy(hostname: string, port: number, noProxy: string): boolean {
  const host = stripBrackets(hostname.toLowerCase()).replace(/\.$/, '');
  for (const raw of noProxy.split(',')) {
    const entry = raw.trim().toLowerCase();
    if (!entry) continue;
    if (entry === '*') return true;
    const { name, entryPort } = splitEntryPort(entry);
    if (entryPort !== undefined && entryPort !== port) continue;
    if (matchesName(host, name)) return true;
  }
  return false;
}

function stripBrackets(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/** "host:8080", "[::1]:8080", "10.0.0.0/8", "::1" (a bare IPv6 address has colons but no port). */
function splitEntryPort(entry: string): { name: string; entryPort?: number } {
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry);
  if (bracketed) return { name: bracketed[1], entryPort: bracketed[2] ? Number(bracketed[2]) : undefined };
  const colons = entry.split(':').length - 1;
  if (colons === 1) {
    const [name, p] = entry.split(':');
    if (/^\d+$/.test(p)) return { name, entryPort: Number(p) };
  }
  return { name: entry };
}

function matchesName(host: string, entry: string): boolean {
  const slash = entry.indexOf('/');
  if (slash !== -1) return inCidr(host, entry.slice(0, slash), Number(entry.slice(slash + 1)));
  if (isIP(entry) || isIP(host)) return isIP(entry) !== 0 && sameAddress(host, entry);
  const name = entry.replace(/^\*?\./, '').replace(/\.$/, '');
  if (!name) return false;
  return host === name || host.endsWith(`.${name}`);
}

function sameAddress(a: string, b: string): boolean {
  const x = addressBytes(a);
  const y = addressBytes(b);
  return !!x && !!y && x.length === y.length && x.every((v, i) => v === y[i]);
}

function inCidr(host: string, network: string, bits: number): boolean {
  const h = addressBytes(host);
  const n = addressBytes(network);
  if (!h || !n || h.length !== n.length || !Number.isInteger(bits) || bits < 0 || bits > h.length * 8) return false;
  for (let i = 0; i < h.length; i++) {
    const take = Math.max(0, Math.min(8, bits - i * 8));
    const mask = take === 0 ? 0 : (0xff << (8 - take)) & 0xff;
    if ((h[i] & mask) !== (n[i] & mask)) return false;
  }
  return true;
}

/** IPv4 → 4 bytes, IPv6 (incl. ::ffff:a.b.c.d) → 16 bytes, anything else → undefined. */
export function addressBytes(address: string): number[] | undefined {
  const kind = isIP(address);
  if (kind === 4) return address.split('.').map(Number);
  if (kind !== 6) return undefined;
  let text = address.toLowerCase();
  const tail: number[] = [];
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    tail.push(...v4[1].split('.').map(Number));
    text = text.slice(0, -v4[1].length) + '0:0';
  }
  const [head, rest] = text.includes('::') ? text.split('::') : [text, undefined];
  const headGroups = head ? head.split(':') : [];
  const restGroups = rest ? rest.split(':') : [];
  const missing = 8 - headGroups.length - restGroups.length;
  const groups = [...headGroups, ...Array(rest === undefined ? 0 : missing).fill('0'), ...restGroups];
  const bytes: number[] = [];
  for (const g of groups) {
    const v = parseInt(g || '0', 16);
    bytes.push(v >> 8, v & 0xff);
  }
  if (v4) bytes.splice(12, 4, ...tail);
  return bytes.length === 16 ? bytes : undefined;
}
